// SPDX-License-Identifier: MIT
// The runner of tst_firstrun: unlike gui_main.cpp it makes no QApplication, because the
// test cases make (and one of them remakes) their own. Built plain, like the other runners.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <QByteArray>

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", QByteArray("offscreen"));
    return Catch::Session().run(argc, argv);
}
