// SPDX-License-Identifier: MIT
// The Catch2 runner of the GUI test executables: a QApplication on the offscreen platform,
// and settings in a throwaway location (QStandardPaths test mode), never the user's.
// Its own file so that it can be compiled without optimisation and sanitizers: Catch2's
// runner is the slowest translation unit of the build, and none of it is Headroom's code.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "ui/shell/memorytuning.h"

#include <QApplication>
#include <QFileInfo>
#include <QStandardPaths>

int main(int argc, char** argv)
{
    headroom::tuneAllocatorForInteractiveUse(); // as the application does
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName(QStringLiteral("HeadroomTests"));
    QApplication::setApplicationName(QFileInfo(QString::fromLocal8Bit(argv[0])).baseName());
    return Catch::Session().run(argc, argv);
}
