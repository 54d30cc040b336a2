// SPDX-License-Identifier: MIT
// The explorer on a million-event file, not run by default: the cancel's memory, the event
// loop's stalls while loading, redraw times, first showings and the postmortem's export.
#include <catch2/catch.hpp>

#include "core/io/loader.h"
#include "core/whatif/calibration/batchratio.h"
#include "ui/explorer/analysiscontroller.h"
#include "ui/explorer/viewexport.h"
#include "ui/shell/explorer.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"
#include "ui/timeline/timelineminimap.h"
#include "ui/timeline/timelineview.h"
#include "ui/views/allocationsmodel.h"
#include "ui/views/allocationsview.h"
#include "ui/views/allocatorview.h"
#include "ui/views/bookmarksview.h"
#include "ui/views/breakdownview.h"
#include "ui/views/compareview.h"
#include "ui/views/diagnosisview.h"
#include "ui/views/moduleview.h"
#include "ui/views/ranksview.h"
#include "ui/views/stackview.h"
#include "ui/whatif/allocatorsection.h"
#include "ui/whatif/whatifchart.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QDir>
#include <QPushButton>
#include <QStatusBar>
#include <ctime>
#include <QApplication>
#include <QCheckBox>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSocketNotifier>
#include <QSortFilterProxyModel>
#include <QTreeWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QTableView>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QTreeView>
#include <QUrl>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>
#include <fcntl.h>
#include <unistd.h>

#include "analysedwindow.h"

using namespace headroom;

// Not run by default: `tst_gui "[.benchmark]"` (needs /tmp/big1m.pickle, 1,000,000 events).
TEST_CASE("timeline redraw on a million events", "[.benchmark]")
{
    const QString path = qEnvironmentVariableIsSet("HEADROOM_BENCH_FILE") ? qEnvironmentVariable("HEADROOM_BENCH_FILE")
                                                                         : QStringLiteral("/tmp/big1m.pickle");
    if (!QFileInfo::exists(path))
        return;
    {
        // Cancelling a load gives its memory back (issue 7 §4): the process size before,
        // at the moment of the cancel (half-way), and once the worker has unwound.
        auto rssMiB = [] {
            long pages = 0, resident = 0;
            if (FILE* f = std::fopen("/proc/self/statm", "r")) {
                if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
                    resident = 0;
                std::fclose(f);
            }
            return double(resident) * double(sysconf(_SC_PAGESIZE)) / 1048576.0;
        };
        MainWindow window;
        window.show();
        QApplication::processEvents();
        const double before = rssMiB();
        LoadController* loader = window.loadController();
        QSignalSpy cancelled(loader, &LoadController::loadCancelled);
        int permille = 0;
        QObject::connect(loader, &LoadController::progressChanged, [&](int p) { permille = p; });
        window.openFile(path);
        REQUIRE(QTest::qWaitFor([&] { return permille >= 500; }, 5 * kTimeoutMs));
        const double atCancel = rssMiB();
        loader->cancel();
        QThreadPool::globalInstance()->waitForDone(); // the worker has seen the flag and unwound
        QApplication::processEvents();
        const double after = rssMiB();
        CHECK(cancelled.count() == 1);
        CHECK(window.trace() == nullptr);
        WARN("cancel frees memory: RSS " << before << " MiB before the load, " << atCancel << " MiB at the cancel ("
                                          << permille / 10.0 << "% read), " << after << " MiB after it");
    }
    {
        // The longest event-loop stall while the file loads and is analysed (issue 7 §4),
        // measured two ways:
        // - input latency: a thread writes a time stamp into a pipe every millisecond and a
        //   socket notifier reads them. The notifier is a source of the same priority as
        //   the window system's input, so a stamp waits as long as a key press or a click
        //   would: until the event-loop pass under way ends.
        // - until idle: the largest gap between the ticks of a 1 ms QTimer. Qt runs a
        //   timer that has fired at idle priority, so a tick waits for every queued event,
        //   the chain of short passes included: an upper bound.
        MainWindow window;
        window.resize(1400, 900);
        window.show();
        // The window's own first paint (the start page) happens before the user opens a file.
        REQUIRE(QTest::qWaitForWindowExposed(&window));
        QApplication::processEvents();
        QSignalSpy analysed(window.explorer(), &Explorer::dataAvailable);
        QElapsedTimer clock;
        qint64 loadedAt = -1, deliveredAt = -1;
        QObject::connect(window.loadController(), &LoadController::traceLoaded, [&] { loadedAt = clock.nsecsElapsed(); });
        QObject::connect(window.explorer(), &Explorer::dataAvailable, [&] { deliveredAt = clock.nsecsElapsed(); });
        auto longest = [](std::vector<std::pair<qint64, qint64>>& turns, qint64 length, qint64 began) {
            turns.emplace_back(length, began); // the four longest: (length, when it began)
            std::sort(turns.begin(), turns.end(), std::greater<>());
            if (turns.size() > 4)
                turns.pop_back();
        };
        auto describe = [](const std::vector<std::pair<qint64, qint64>>& turns) {
            std::ostringstream out;
            for (const auto& [length, began] : turns)
                out << " " << double(length) / 1e6 << " ms at " << double(began) / 1e6 << " ms;";
            return out.str();
        };

        std::vector<std::pair<qint64, qint64>> ticks, inputs;
        qint64 lastTick = 0;
        QTimer tick;
        tick.setInterval(1);
        QObject::connect(&tick, &QTimer::timeout, [&] {
            const qint64 now = clock.nsecsElapsed();
            longest(ticks, now - lastTick, lastTick);
            lastTick = now;
        });
        int fds[2];
        REQUIRE(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
        std::atomic<bool> stop{false};
        QSocketNotifier notifier(fds[0], QSocketNotifier::Read);
        QObject::connect(&notifier, &QSocketNotifier::activated, [&] {
            const qint64 now = clock.nsecsElapsed();
            qint64 stamp = 0;
            bool first = true;
            while (read(fds[0], &stamp, sizeof stamp) == ssize_t(sizeof stamp))
                if (std::exchange(first, false)) // the oldest stamp waited longest
                    longest(inputs, now - stamp, stamp);
        });
        // HEADROOM_STALL_LOG=1: every gap of over 3 ms between two events the application
        // delivers, with the receiver and the event type, and the CLOCK_MONOTONIC time of
        // the start (to line up with `perf record -k CLOCK_MONOTONIC`).
        struct EventLog : QObject {
            QElapsedTimer* clock = nullptr;
            std::vector<std::tuple<qint64, QString, int>> events;
            bool eventFilter(QObject* o, QEvent* e) override
            {
                events.emplace_back(clock->nsecsElapsed(), QString::fromLatin1(o->metaObject()->className()) + QLatin1Char('/') + o->objectName(), int(e->type()));
                return false;
            }
        } log;
        log.clock = &clock;
        const bool logging = qEnvironmentVariableIsSet("HEADROOM_STALL_LOG");
        if (logging) {
            qApp->installEventFilter(&log);
            timespec ts{};
            clock_gettime(CLOCK_MONOTONIC, &ts);
            std::fprintf(stderr, "stall log: clock starts at CLOCK_MONOTONIC %ld.%09ld\n", long(ts.tv_sec), long(ts.tv_nsec));
        }
        clock.start();
        std::thread writer([&] {
            while (!stop.load()) {
                const qint64 stamp = clock.nsecsElapsed();
                if (write(fds[1], &stamp, sizeof stamp) != ssize_t(sizeof stamp))
                    break;
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
        tick.start();
        window.openFile(path);
        const bool done = analysed.wait(5 * kTimeoutMs);
        QApplication::processEvents(); // the paint that follows the last delivery counts too
        tick.stop();
        stop.store(true);
        writer.join();
        close(fds[0]);
        close(fds[1]);
        qApp->removeEventFilter(&log);
        for (size_t i = 0; i + 1 < log.events.size(); ++i) {
            const auto& [at, receiver, type] = log.events[i];
            const qint64 gap = std::get<0>(log.events[i + 1]) - at;
            if (gap > 3000000)
                std::fprintf(stderr, "stall log: %.1f ms at %.1f ms after %s, event type %d\n", double(gap) / 1e6,
                             double(at) / 1e6, qPrintable(receiver), type);
        }
        REQUIRE(done);
        REQUIRE(!ticks.empty());
        REQUIRE(!inputs.empty());
        WARN("event-loop stall while loading and analysing (" << double(clock.nsecsElapsed()) / 1e9 << " s; file loaded at "
             << double(loadedAt) / 1e6 << " ms, analysis in every view at " << double(deliveredAt) / 1e6 << " ms):\n"
             << "  input latency, longest: " << double(inputs.front().first) / 1e6 << " ms (the longest:"
             << describe(inputs) << ")\n"
             << "  until idle, longest: " << double(ticks.front().first) / 1e6 << " ms (the longest:" << describe(ticks) << ")");
    }
    Analysed a(path);
    TimelineView* timeline = a.explorer().timeline();
    a.window.resize(1920 + 120, 1000);
    QApplication::processEvents();
    QCustomPlot* plot = timeline->plot();
    auto cpuNow = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
    };
    auto measure = [&](const char* what) {
        // Wall time and this thread's CPU time (the second is robust to a busy machine).
        const int kFrames = qEnvironmentVariableIntValue("HEADROOM_BENCH_FRAMES") > 0 ? qEnvironmentVariableIntValue("HEADROOM_BENCH_FRAMES") : 20;
        QElapsedTimer t;
        t.start();
        const double cpu0 = cpuNow();
        for (int i = 0; i < kFrames; ++i) {
            // A pan by a few pixels: the downsampling and the replot both run again.
            const QCPRange r = plot->xAxis->range();
            const double d = r.size() * (i % 2 ? 0.001 : -0.001);
            plot->xAxis->setRange(r.lower + d, r.upper + d);
            timeline->replotNow();
        }
        const double ms = double(t.nsecsElapsed()) / 1e6 / kFrames;
        const double cpu = (cpuNow() - cpu0) / kFrames;
        WARN(what << ": " << ms << " ms per frame (" << cpu << " ms CPU) at " << plot->axisRect()->width() << " px");
    };
    timeline->zoomToFit();
    measure("by category, whole run");
    plot->xAxis->setRange(plot->xAxis->range().lower, plot->xAxis->range().lower + plot->xAxis->range().size() / 10);
    measure("by category, a tenth");
    timeline->zoomToFit();
    for (int c = 0; c < kTensorCategoryCount; ++c)
        timeline->setCategoryVisible(TensorCategory(c), false);
    measure("totals only (categories hidden), whole run");
    for (int c = 0; c < kTensorCategoryCount; ++c)
        timeline->setCategoryVisible(TensorCategory(c), true);
    timeline->setMode(TimelineView::Mode::ByAllocation);
    measure("by allocation, whole run");
    plot->xAxis->setRange(plot->xAxis->range().lower, plot->xAxis->range().lower + plot->xAxis->range().size() / 10);
    measure("by allocation, a tenth");
    timeline->setMode(TimelineView::Mode::ByCategory);
    timeline->zoomToFit();
    a.explorer().timeline()->plot()->layer(QStringLiteral("overlay"))->setVisible(false);
    measure("by category without the overlay layer, whole run");
    a.explorer().timeline()->plot()->layer(QStringLiteral("overlay"))->setVisible(true);

    // Each view's first showing builds what waited for it (DeferredRebuild) on the GUI
    // thread, and so does a click on the timeline for the views on screen.
    a.explorer().showView(QStringLiteral("timeline"));
    QApplication::processEvents(); // the replot the overlay's layer change asked for
    for (ExplorerView* v : a.explorer().views()) {
        QElapsedTimer shown;
        shown.start();
        a.explorer().showView(v->viewId());
        QApplication::processEvents();
        WARN("first showing of " << v->viewId().toStdString() << ": " << double(shown.nsecsElapsed()) / 1e6
                                 << " ms on the GUI thread");
    }
    {
        const int64_t events = int64_t(a.data().timeline().allocated.size());
        QElapsedTimer clicked;
        clicked.start();
        a.explorer().selection()->setEvent(events / 3);
        QApplication::processEvents();
        WARN("selecting an event (a click on the timeline, the what-if view in front): "
             << double(clicked.nsecsElapsed()) / 1e6 << " ms on the GUI thread");
    }

    // File > Export Postmortem runs on the GUI thread (it draws five views): how long the
    // window is busy with it on a million events.
    QTemporaryDir out;
    const QString into = qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR")
                             ? qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/postmortem")
                             : out.path();
    QElapsedTimer exportClock;
    exportClock.start();
    QString error;
    const bool exported = a.window.exportPostmortem(into, &error);
    WARN("postmortem export: " << double(exportClock.nsecsElapsed()) / 1e6 << " ms on the GUI thread"
                               << (exported ? "" : " (failed: " + error.toStdString() + ")"));
}
