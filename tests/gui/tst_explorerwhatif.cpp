// SPDX-License-Identifier: MIT
// The what-if panel in the explorer on real snapshots, offscreen: legible at the default size,
// calibrated once by the report, its settings saved, drawn on the timeline and in the diagnosis.
#include <catch2/catch.hpp>

#include "core/io/loader.h"
#include "core/whatif/calibration/batchratio.h"
#include "ui/explorer/analysiscontroller.h"
#include "ui/explorer/viewexport.h"
#include "ui/shell/explorer.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"
#include "ui/timeline/timelineminimap.h"
#include "ui/timeline/timelineplotitems.h"
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

TEST_CASE("the what-if panel is legible at the default window size", "[whatif]")
{
    // At 1400x800 the panel once opened in a narrow dock: the chart's captions ran into each
    // other and the summary was cut off.
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    a.window.resize(1400, 800);
    a.explorer().showView(QStringLiteral("whatif"));
    QApplication::processEvents();
    WhatIfView* view = a.explorer().whatIf();
    WhatIfPanel* panel = view->panel();
    REQUIRE(QTest::qWaitFor([&] { return panel->projection().peak > 0; }, kTimeoutMs));
    QApplication::processEvents();
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR"))
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/whatif-1400x800.png"));

    // The whole width of the panel is on screen: no horizontal scrolling to reach the chart.
    auto* scroll = view->findChild<QScrollArea*>();
    REQUIRE(scroll);
    CHECK_FALSE(scroll->horizontalScrollBar()->isVisible());
    auto* chart = panel->findChild<WhatIfChart*>();
    REQUIRE(chart);
    CHECK(chart->width() >= 300);
    // The verdict shows whole without scrolling; the chart, under the ladder, scrolls into view
    // whole in width.
    auto* summary = panel->findChild<QLabel*>(QStringLiteral("whatifSummary"));
    REQUIRE(summary);
    CHECK(summary->visibleRegion().boundingRect().size() == summary->size());
    scroll->ensureWidgetVisible(chart);
    QApplication::processEvents();
    CHECK(chart->visibleRegion().boundingRect().width() == chart->width());
    // Every label of the results column shows all of its wrapped text.
    for (QLabel* label : panel->findChildren<QLabel*>()) {
        if (!label->isVisible() || !label->wordWrap() || label->text().isEmpty())
            continue;
        INFO(label->text().toStdString());
        CHECK(label->height() >= label->heightForWidth(label->width()));
    }
}

TEST_CASE("a setting replayed in the what-if's Allocator section is drawn on the timeline", "[whatif][allocator]")
{
    Analysed a(realTrace("pt21_ftcourse_memory_snapshot.pickle"));
    a.explorer().showView(QStringLiteral("whatif"));
    QApplication::processEvents();
    AllocatorSection* section = a.explorer().whatIf()->panel()->allocatorSection();
    REQUIRE(QTest::qWaitFor([&] { return section->result() != nullptr; }, kTimeoutMs));
    TimelineView* timeline = a.explorer().timeline();
    CHECK_FALSE(timeline->hasSimulatedReserved());
    section->findChild<QCheckBox*>(QStringLiteral("allocExpandable"))->click();
    REQUIRE(QTest::qWaitFor([&] { return timeline->hasSimulatedReserved(); }, kTimeoutMs));
    REQUIRE(timeline->simulatedReservedGraph());
    CHECK(timeline->simulatedReservedGraph()->name() == QStringLiteral("reserved, simulated (expandable_segments:True)"));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR")) {
        QApplication::processEvents();
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/allocator-overlay.png"));
    }
    // Back at the recorded setting, the curve goes.
    section->findChild<QCheckBox*>(QStringLiteral("allocExpandable"))->click();
    REQUIRE(QTest::qWaitFor([&] { return !timeline->hasSimulatedReserved(); }, kTimeoutMs));
}

TEST_CASE("what-if: docked, calibrated on the analysis, settings saved with the trace and in the postmortem")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    WhatIfView* view = a.explorer().whatIf();
    REQUIRE(view);
    CHECK(a.explorer().dock(QStringLiteral("whatif")));
    WhatIfPanel* panel = view->panel();
    INFO(panel->calibrationError().toStdString());
    // The measured micro-batch is not in this trace: state it as the panel asks.
    StatedConfig stated;
    stated.microBatch = 1;
    stated.seq = 128;
    stated.precision = Precision::Fp32;
    panel->setStated(stated);
    panel->finishCalibration(); // it calibrates in the background
    REQUIRE(panel->calibrationError().isEmpty());
    LeverConfig c = panel->config();
    c.microBatch = 3;
    c.accum = 5;
    panel->setConfig(c);
    const double projected = panel->projection().peak;
    CHECK(projected > 0);

    QTemporaryDir dir;
    const QString text = a.postmortemReport(dir.filePath(QStringLiteral("pm")));
    CHECK(text.contains(QStringLiteral("micro-batch 3, accumulation 5")));
    CHECK(text.contains(QStringLiteral("Projected peak")));

    const QString hrt = dir.filePath(QStringLiteral("with_whatif.hrt"));
    REQUIRE(a.saveAs(hrt));
    const auto reloaded = Loader::load(hrt.toStdString());
    CHECK(reloaded->snapshot.userData.find("\"micro_batch\":3") != std::string::npos);

    // Reopening the saved file brings the settings back once the analysis is in.
    Analysed b(hrt);
    WhatIfPanel* again = b.explorer().whatIf()->panel();
    again->finishCalibration(); // it calibrates in the background; the restored levers wait for it
    CHECK(again->config().microBatch == 3);
    CHECK(again->config().accum == 5);
    CHECK(again->projection().peak == Approx(projected).epsilon(1e-9));
}

TEST_CASE("the diagnosis's first move follows the what-if panel's ladder", "[whatif][diagnosis]")
{
    // The sample on 48 GiB misses: the diagnosis's first move is the ladder's. Given a
    // measured value in the panel, or started from the panel's levers, it is the panel's.
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    window.explorer()->analysis()->setDefaultCapacity(int64_t(48) << 30);
    QSignalSpy analysed(window.explorer(), &Explorer::dataAvailable);
    window.openFile(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    REQUIRE(analysed.wait(kTimeoutMs));
    QApplication::processEvents();
    Explorer& explorer = *window.explorer();
    WhatIfPanel* panel = explorer.whatIf()->panel();
    panel->finishCalibration();
    DiagnosisView* diagnosis = explorer.diagnosis();
    auto firstMove = [&] {
        const QString text = diagnosis->browser()->toPlainText();
        const qsizetype at = text.indexOf(QStringLiteral("First move: as run"));
        const qsizetype panelAt = text.indexOf(QStringLiteral("First move: at the what-if panel's levers"));
        return text.mid(std::max(at, panelAt), 400);
    };
    CHECK(diagnosis->capacityFirstMove().isEmpty()); // the file alone: the report's
    CHECK(firstMove().startsWith(QStringLiteral("First move: as run, the what-if projects")));

    StatedConfig st;
    st.microBatch = 4;
    st.seq = 128;
    panel->setStated(st);
    panel->finishCalibration();
    REQUIRE_FALSE(diagnosis->capacityFirstMove().isEmpty());
    CHECK(firstMove().startsWith(QStringLiteral("First move: as run (with the measured values given in the what-if panel)")));
    // Its numbers are the panel's ladder's.
    const Ladder& ladder = panel->ladder();
    REQUIRE(ladder.firstFit >= 0);
    const QString fitPeak = QString::fromStdString(formatBytes(int64_t(ladder.rungs[size_t(ladder.firstFit)].projection.peak)));
    CHECK(firstMove().contains(QStringLiteral("projected peak ") + fitPeak));

    // A lever moved and the ladder rebuilt from there ("Fit"): the diagnosis says where from.
    LeverConfig c = panel->config();
    c.microBatch = 2;
    panel->setConfig(c);
    panel->findChild<QPushButton*>(QStringLiteral("whatifFit"))->click();
    panel->finishLadderNow(); // built off the GUI thread
    CHECK(firstMove().startsWith(QStringLiteral("First move: at the what-if panel's levers (micro_batch=2)")));
}

TEST_CASE("a capacity chosen in the what-if is the file's in every view", "[whatif][capacity]")
{
    // The sample does not tell its device: nothing is judged until the user chooses one, and
    // then the Diagnosis, the timeline, the ladder and the report all judge against it.
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    Explorer& explorer = a.explorer();
    WhatIfPanel* panel = explorer.whatIf()->panel();
    panel->finishCalibration();
    auto* combo = panel->findChild<QComboBox*>(QStringLiteral("whatifCapacity"));
    REQUIRE(combo);
    CHECK(combo->currentText() == QStringLiteral("unknown"));
    CHECK(panel->device().capacityBytes == 0);
    CHECK(panel->projection().verdict == Verdict::Unknown);
    CHECK(panel->ladder().rungs.empty());
    CHECK(explorer.diagnosis()->browser()->toPlainText().contains(QStringLiteral("Device capacity: unknown")));
    CHECK(explorer.timeline()->plotItems().capacityLabel().isEmpty());

    // A lever moved first: choosing the capacity keeps it (and the calibration).
    LeverConfig c = panel->config();
    c.accum = 3;
    panel->setConfig(c);
    QSignalSpy analysed(&explorer, &Explorer::dataAvailable);
    combo->setCurrentIndex(combo->findText(QStringLiteral("48 GiB")));
    REQUIRE(analysed.wait(kTimeoutMs));
    QApplication::processEvents();
    const int64_t cap = int64_t(48) << 30;
    CHECK(a.data().capacity.bytes == cap);
    CHECK(a.data().capacity.source == "chosen in the what-if panel");
    CHECK(panel->device().capacityBytes == cap);
    CHECK(panel->config().accum == 3);
    CHECK_FALSE(panel->isCalibrating());
    CHECK(combo->currentText() == QStringLiteral("48 GiB"));
    CHECK(explorer.diagnosis()->browser()->toPlainText().contains(
        QStringLiteral("Device capacity: 48.00 GiB (chosen in the what-if panel)")));
    CHECK(explorer.timeline()->plotItems().capacityLabel().contains(QStringLiteral("48.00 GiB")));
    CHECK(panel->projection().verdict != Verdict::Unknown);
    panel->finishLadderNow();
    CHECK_FALSE(panel->ladder().rungs.empty());
    QTemporaryDir dir;
    const QString report = a.postmortemReport(dir.path());
    CHECK(report.contains(QStringLiteral("| Device capacity | 48.00 GiB")));
    // The what-if's configuration line keeps the measured line's unknowns.
    CHECK(report.contains(QStringLiteral("precision fp32 (not measured: the trace does not tell it)")));

    // Back to "unknown": every view forgets it.
    combo->setCurrentIndex(0);
    REQUIRE(analysed.wait(kTimeoutMs));
    QApplication::processEvents();
    CHECK(a.data().capacity.bytes == 0);
    CHECK(explorer.timeline()->plotItems().capacityLabel().isEmpty());
    CHECK(panel->projection().verdict == Verdict::Unknown);
}

TEST_CASE("the what-if panel takes the report's calibration instead of making a second one", "[whatif]")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    WhatIfPanel* panel = a.explorer().whatIf()->panel();
    REQUIRE(a.data().whatIf);
    // Delivered with the analysis: nothing to wait for, the same baseline as the diagnosis's.
    CHECK_FALSE(panel->isCalibrating());
    CHECK(panel->projection().peak > 0);
    // The same baseline, its unknown micro-batch counted in ratios (core/whatif/calibration/batchratio.h).
    CHECK(panel->measuredConfig() == withBatchRatios(*a.data().whatIf->calibration()).baseline.config);
    // Given a measured value, the panel knows more than the file: it calibrates itself.
    StatedConfig st;
    st.microBatch = 4;
    panel->setStated(st);
    CHECK(panel->isCalibrating());
    panel->finishCalibration();
    CHECK(panel->measuredConfig().microBatch == 4);
}
