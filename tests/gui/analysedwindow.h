// SPDX-License-Identifier: MIT
#pragma once
// A shown main window with a file loaded and analysed: what the explorer's GUI tests start from.

#include "ui/shell/explorer.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"

#include <catch2/catch.hpp>

#include <QApplication>
#include <QFile>
#include <QSignalSpy>
#include <QString>

namespace headroom {

constexpr int kTimeoutMs = 60000;

inline QString realTrace(const char* name)
{
    return QStringLiteral(HEADROOM_REAL_TRACES_DIR "/") + QLatin1String(name);
}

/// A shown main window, loaded and analysed.
struct Analysed {
    MainWindow window;

    explicit Analysed(const QString& path)
    {
        window.resize(1400, 900);
        window.show();
        QSignalSpy loaded(window.loadController(), &LoadController::traceLoaded);
        QSignalSpy analysed(window.explorer(), &Explorer::dataAvailable);
        window.openFile(path);
        REQUIRE((loaded.count() > 0 || loaded.wait(kTimeoutMs)));
        REQUIRE((analysed.count() > 0 || analysed.wait(kTimeoutMs)));
        REQUIRE(window.explorer()->data());
        QApplication::processEvents();
    }

    Explorer& explorer() { return *window.explorer(); }
    const ExplorerData& data() { return *window.explorer()->data(); }
    /// File ▸ Save As, waited for: the write runs in the background.
    bool saveAs(const QString& path)
    {
        QSignalSpy saved(&window, &MainWindow::saved);
        window.saveAs(path);
        return saved.count() > 0 || saved.wait(kTimeoutMs);
    }
    /// File ▸ Export Postmortem into `dir`: its report.md.
    QString postmortemReport(const QString& dir)
    {
        QString error;
        REQUIRE(window.exportPostmortem(dir, &error));
        QFile md(dir + QStringLiteral("/report.md"));
        REQUIRE(md.open(QIODevice::ReadOnly));
        return QString::fromUtf8(md.readAll());
    }
};

} // namespace headroom
