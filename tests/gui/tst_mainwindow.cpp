// SPDX-License-Identifier: MIT
// The main window loads real snapshots offscreen and plots what the core replayed.
#include <catch2/catch.hpp>

#include "core/io/loader.h"
#include "ui/plot/byteaxisticker.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"
#include "ui/timeline/timelineview.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QMessageBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cstdlib>

using namespace headroom;

namespace {

constexpr int kLoadTimeoutMs = 90000; // generous: ASan with both cores busy

QString realTrace(const char* name)
{
    return QStringLiteral(HEADROOM_REAL_TRACES_DIR "/") + QLatin1String(name);
}

QString fixture(const char* name)
{
    return QStringLiteral(HEADROOM_SOURCE_DIR "/tests/fixtures/") + QLatin1String(name);
}

/// A shown main window with helpers that wait for the background load.
struct WindowFixture {
    MainWindow window;
    QSignalSpy loaded{window.loadController(), &LoadController::traceLoaded};
    QSignalSpy failed{window.loadController(), &LoadController::loadFailed};
    QSignalSpy cancelled{window.loadController(), &LoadController::loadCancelled};

    WindowFixture()
    {
        window.resize(1200, 700);
        window.show();
    }

    bool awaitLoaded(const QString& path)
    {
        const qsizetype before = loaded.count();
        window.openFile(path);
        return loaded.count() > before || loaded.wait(kLoadTimeoutMs);
    }

    bool awaitFailed(const QString& path)
    {
        const qsizetype before = failed.count();
        window.openFile(path);
        return failed.count() > before || failed.wait(kLoadTimeoutMs);
    }

    double plottedMax() const { return window.timelineView()->plottedPeakBytes(); }
};

double graphMax(QCPGraph* graph)
{
    double m = 0;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        m = std::max(m, it->value);
    return m;
}

} // namespace

TEST_CASE("silmont snapshot: the plot holds the replayed peak")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(realTrace("pt27_silmont_mem_snapshot.pickle")));
    const auto trace = f.window.trace();
    REQUIRE(trace);
    REQUIRE(trace->timelines.size() == 1);
    CHECK(trace->timelines[0].peakAllocated == 3249143816);
    CHECK(trace->timelines[0].peakEventIndex == 52);
    CHECK(f.plottedMax() == 3249143816.0);
    CHECK(graphMax(f.window.timelineView()->plot()->graph(0)) == 3249143816.0);
    CHECK(f.window.timelineView()->hasTime());
    CHECK(f.window.windowTitle().contains(QStringLiteral("pt27_silmont_mem_snapshot.pickle")));

    // The peak marker sits on the peak.
    auto* tracer = f.window.timelineView()->plot()->findChild<QCPItemTracer*>();
    if (!tracer) { // items are not QObject children in every QCustomPlot build; search the list
        for (int i = 0; i < f.window.timelineView()->plot()->itemCount(); ++i)
            if ((tracer = qobject_cast<QCPItemTracer*>(f.window.timelineView()->plot()->item(i))))
                break;
    }
    REQUIRE(tracer);
    CHECK(tracer->position->value() == 3249143816.0);
}

TEST_CASE("kk full step: peak, x-axis toggle, zoom and tooltip")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(realTrace("pt27_kk_memory_ctx128_fullstep.pickle")));
    TimelineView* view = f.window.timelineView();
    const auto trace = f.window.trace();
    CHECK(trace->timelines[0].peakAllocated == 54802667524);
    CHECK(trace->timelines[0].peakEventIndex == 19335);
    CHECK(f.plottedMax() == 54802667524.0);

    REQUIRE(view->hasTime());
    CHECK(view->xAxisMode() == TimelineView::XAxisMode::Time);
    const double timeUpper = view->plot()->xAxis->range().upper;
    CHECK(timeUpper < 1000.0); // 0.56 s shown in milliseconds

    auto* toggle = f.window.findChild<QAction*>(QStringLiteral("actionToggleXAxis"));
    REQUIRE(toggle);
    toggle->trigger();
    CHECK(view->xAxisMode() == TimelineView::XAxisMode::EventIndex);
    CHECK(view->plot()->xAxis->range().upper >= 19341.0);
    CHECK(view->plot()->xAxis->label().contains(QStringLiteral("index")));
    CHECK(f.plottedMax() == 54802667524.0); // the peak survives the re-downsampling

    // Zoom into the first 1000 events: the peak (event 19335) is out of view.
    view->plot()->xAxis->setRange(0, 1000);
    CHECK(f.plottedMax() < 54802667524.0);
    auto* fit = f.window.findChild<QAction*>(QStringLiteral("actionZoomToFit"));
    REQUIRE(fit);
    fit->trigger();
    CHECK(f.plottedMax() == 54802667524.0);

    toggle->trigger();
    CHECK(view->xAxisMode() == TimelineView::XAxisMode::Time);
    CHECK(view->plot()->xAxis->range().upper == Approx(timeUpper));

    // The tooltip names the event, its size and frames.
    const QString tip = view->describeEvent(19335);
    CHECK(tip.contains(QStringLiteral("Event 19335")));
    CHECK(tip.contains(QStringLiteral("51.04 GiB")));
    CHECK(tip.contains(QStringLiteral("top frames")));
}

TEST_CASE("a file without time_us always shows event indices")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(realTrace("pt21_ftcourse_memory_snapshot.pickle")));
    TimelineView* view = f.window.timelineView();
    CHECK_FALSE(view->hasTime());
    CHECK(view->xAxisMode() == TimelineView::XAxisMode::EventIndex);
    view->setXAxisMode(TimelineView::XAxisMode::Time);
    CHECK(view->xAxisMode() == TimelineView::XAxisMode::EventIndex);
    CHECK(f.plottedMax() == double(f.window.trace()->timelines[0].peakAllocated));
}

TEST_CASE("a bad file reports an error and keeps the previous trace")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(realTrace("pt27_silmont_mem_snapshot.pickle")));
    const auto before = f.window.trace();
    const QString pathBefore = f.window.currentPath();

    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("garbage.pickle"));
    {
        QFile out(bad);
        REQUIRE(out.open(QIODevice::WriteOnly));
        out.write("\x80\x04this is not a memory snapshot", 32);
    }
    REQUIRE(f.awaitFailed(bad));
    const QString message = f.failed.last().at(1).toString();
    CHECK(message.contains(QStringLiteral("byte")));
    CHECK(f.window.trace() == before);
    CHECK(f.window.currentPath() == pathBefore);
    CHECK(f.plottedMax() == 3249143816.0);

    auto* box = f.window.findChild<QMessageBox*>(QStringLiteral("loadErrorBox"));
    REQUIRE(box);
    CHECK(box->informativeText() == message);
    box->close();

    REQUIRE(f.awaitFailed(QStringLiteral(HEADROOM_SOURCE_DIR "/tests/fixtures/does-not-exist.pickle")));
    CHECK(f.window.trace() == before);
}

TEST_CASE("a corrupted settings file: the window still opens, files open, settings are rewritten")
{
    const QString settingsPath = QSettings().fileName();
    QSettings().sync();
    {
        QFile out(settingsPath);
        REQUIRE(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        // Binary junk, a broken group, values of the wrong type and truncated serialised
        // variants for every key the app reads.
        out.write(QByteArray("\x00\xff\xfe[General\n", 13));
        out.write("recentFiles=@Variant(\\0\\0\\0\\x7f\\xff\\xff)\n");
        out.write("window/geometry=@ByteArray(\\x1\\xd9\\xd0\\xcb\\0\\x3)\n");
        out.write("explorer/layout=@ByteArray(garbage)\nexplorer/layoutVersion=not-a-number\n");
        out.write("theme=@Variant(\\0\\0\\0\\n\\xff)\n[broken\n=\n");
        out.write(QByteArray(5000, 'x'));
    }
    {
        WindowFixture f; // constructing it reads every setting
        REQUIRE(f.awaitLoaded(realTrace("pt27_silmont_mem_snapshot.pickle")));
        CHECK(f.plottedMax() == 3249143816.0);
        f.window.close(); // writes geometry, layout and recent files back
    }
    QSettings s;
    s.sync();
    CHECK(s.status() == QSettings::NoError);
    const QStringList recent = s.value(QStringLiteral("recentFiles")).toStringList();
    REQUIRE_FALSE(recent.isEmpty());
    CHECK(recent.front().endsWith(QStringLiteral("pt27_silmont_mem_snapshot.pickle")));
    WindowFixture again; // and the rewritten file reads back
    CHECK(again.window.isVisible());
}

TEST_CASE("cancel drops the running load and keeps the previous trace")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(realTrace("pt27_silmont_mem_snapshot.pickle")));
    const auto before = f.window.trace();
    const qsizetype loadedBefore = f.loaded.count();

    f.window.openFile(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    CHECK(f.window.loadController()->isLoading());
    f.window.loadController()->cancel();
    CHECK_FALSE(f.window.loadController()->isLoading());
    CHECK(f.cancelled.count() == 1);
    // Whatever the worker still returns is stale: nothing arrives.
    CHECK_FALSE(f.loaded.wait(1500));
    CHECK(f.loaded.count() == loadedBefore);
    CHECK(f.window.trace() == before);

    // Latest wins: of two loads in a row only the second one lands.
    f.window.openFile(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    REQUIRE(f.awaitLoaded(realTrace("pt21_ftcourse_memory_snapshot.pickle")));
    QTest::qWait(300);
    CHECK(f.loaded.count() == loadedBefore + 1);
    CHECK(f.window.currentPath().endsWith(QStringLiteral("pt21_ftcourse_memory_snapshot.pickle")));
}

TEST_CASE("several devices get a picker; a device without trace shows its final state")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(fixture("multi_device.pickle")));
    auto* combo = f.window.findChild<QComboBox*>(QStringLiteral("deviceCombo"));
    REQUIRE(combo);
    REQUIRE(combo->count() == 3);
    CHECK(f.plottedMax() == 14750064.0);
    REQUIRE(f.window.selectDevice(1));
    CHECK(f.window.currentDevice() == 1);
    CHECK(f.plottedMax() == 6391808.0);
    REQUIRE(f.window.selectDevice(2));
    CHECK(f.plottedMax() == 9437696.0);
}

TEST_CASE("an OOM is marked with the request and the free memory")
{
    WindowFixture f;
    REQUIRE(f.awaitLoaded(fixture("oom.pickle")));
    QCustomPlot* plot = f.window.timelineView()->plot();
    bool found = false;
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i)))
            found = found || text->text().startsWith(QStringLiteral("OOM: requested "));
    CHECK(found);
    CHECK(f.plottedMax() == 45118768.0);
}

TEST_CASE("byte axis labels use binary units")
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    CHECK(ByteAxisTicker::formatTick(12 * gib, 4 * gib, 60 * gib) == QStringLiteral("12 GiB"));
    CHECK(ByteAxisTicker::formatTick(1.5 * gib, 0.5 * gib, 3 * gib) == QStringLiteral("1.5 GiB"));
    CHECK(ByteAxisTicker::formatTick(512 * 1024.0 * 1024.0, 256 * 1024.0 * 1024.0, 900 * 1024.0 * 1024.0)
          == QStringLiteral("512 MiB"));
    CHECK(ByteAxisTicker::formatTick(0, gib, gib) == QStringLiteral("0"));
}
