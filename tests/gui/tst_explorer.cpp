// SPDX-License-Identifier: MIT
// The explorer's linked views on real snapshots, offscreen: models under
// QAbstractItemModelTester, selection flowing through the shared Selection, exports.
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

TEST_CASE("allocations model passes QAbstractItemModelTester, sorted and filtered")
{
    Analysed a(realTrace("pt27_silmont_mem_snapshot.pickle"));
    const ExplorerDataPtr data = a.explorer().data();
    const MemoryTimeline& tl = data->timeline();

    AllocationsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(AllocationsModel::SortRole);
    proxy.setFilterKeyColumn(-1);
    QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);

    model.resetData(data, data->analysis.liveAt(tl, tl.peakEventIndex));
    REQUIRE(model.rowCount() > 0);
    CHECK(model.columnCount() == AllocationsModel::NUM_COLUMNS);
    for (int c = 0; c < AllocationsModel::NUM_COLUMNS; ++c) {
        proxy.sort(c, Qt::DescendingOrder);
        proxy.sort(c, Qt::AscendingOrder);
    }
    proxy.sort(AllocationsModel::SizeColumn, Qt::DescendingOrder);
    CHECK(proxy.index(0, 0).data(AllocationsModel::AllocationRole).toLongLong()
          == qlonglong(data->analysis.topAtPeak.front()));
    CHECK(proxy.index(0, AllocationsModel::SizeColumn).data().toString().contains(QStringLiteral("iB")));
    proxy.setFilterFixedString(QStringLiteral("parameters"));
    for (int r = 0; r < proxy.rowCount(); ++r)
        CHECK(proxy.index(r, AllocationsModel::CategoryColumn).data().toString() == QStringLiteral("parameters"));
    proxy.setFilterFixedString(QString());
    model.resetData(data, data->analysis.liveAt(tl, -1));
    model.resetData(data, {});
    CHECK(model.rowCount() == 0);
    model.clearData();
}

TEST_CASE("kk full step: the views hold the analysis at the peak")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    const ExplorerData& d = a.data();
    const MemoryTimeline& tl = d.timeline();
    const SelectionState& s = a.explorer().selection()->state();
    CHECK(s.event == tl.peakEventIndex);

    // Breakdown: the bars at the peak add up to the analysis' peak.
    BreakdownView* breakdown = a.explorer().breakdown();
    CHECK(breakdown->shownEvent() == tl.peakEventIndex);
    CHECK(breakdown->breakdown().total == d.analysis.atPeak.total);
    double barSum = 0;
    for (int i = 0; i < breakdown->plot()->plottableCount(); ++i)
        if (auto* bars = qobject_cast<QCPBars*>(breakdown->plot()->plottable(i)))
            if (bars->keyAxis()->axisRect() == breakdown->plot()->axisRects().at(0))
                barSum += bars->data()->constBegin()->value;
    CHECK(barSum == double(d.analysis.atPeak.total));
    CHECK(breakdown->heading().contains(QStringLiteral("at the peak")));

    // Timeline: the stacked categories reach the replayed peak (no live allocation
    // is left out of the stack, and the downsampling keeps the maximum).
    TimelineView* timeline = a.explorer().timeline();
    CHECK(timeline->plottedPeakBytes() == double(tl.peakAllocated));
    CHECK(timeline->plottedStackPeak() == Approx(double(d.analysis.atPeak.total)));

    // Table: live at the peak, largest first.
    AllocationsView* allocations = a.explorer().allocations();
    const QModelIndex first = allocations->proxy()->index(0, 0);
    REQUIRE(first.isValid());
    const auto largest = d.analysis.largestAt(tl, tl.peakEventIndex, 1);
    CHECK(first.data(AllocationsModel::AllocationRole).toLongLong() == qlonglong(largest.front()));
    CHECK(allocations->proxy()->rowCount() == int(d.analysis.liveAt(tl, tl.peakEventIndex).size()));

    // Stacks: the root holds everything live.
    StackView* stacks = a.explorer().stacks();
    REQUIRE_FALSE(stacks->nodes().empty());
    CHECK(stacks->nodes().front().bytes == d.analysis.atPeak.total);
    CHECK(stacks->boxes().size() > 3);

    // Diagnosis and allocator are not empty.
    CHECK(a.explorer().diagnosis()->browser()->toPlainText().contains(QStringLiteral("peak")));
    CHECK(a.explorer().allocator()->summaryText().contains(QStringLiteral("reserved")));
}

TEST_CASE("the panels fit a 1366x768 screen: the window keeps its size when a file opens")
{
    // The what-if levers once set the window's minimum height to 1122 px: opening a file
    // grew a 900 px window past the screen.
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    CHECK(a.window.size() == QSize(1400, 900));
    CHECK(a.window.minimumSizeHint().height() <= 700);
    CHECK(a.window.minimumSizeHint().width() <= 1300);
    a.window.resize(1300, 700); // what a 1366x768 screen leaves, less the task bar and frame
    a.explorer().showView(QStringLiteral("whatif")); // the tallest panel: it scrolls
    QApplication::processEvents();
    CHECK(a.window.size() == QSize(1300, 700));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR"))
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/small-screen-whatif.png"));
}

TEST_CASE("timeline by allocation: bands of the largest allocations, hover and click select them")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    const ExplorerData& d = a.data();
    const MemoryTimeline& tl = d.timeline();
    TimelineView* timeline = a.explorer().timeline();
    timeline->setMode(TimelineView::Mode::ByAllocation);
    CHECK(timeline->mode() == TimelineView::Mode::ByAllocation);
    CHECK(timeline->bandDetail() == TimelineView::kDefaultBands);
    timeline->replotNow();

    // At the peak's pixel, the middle of the stack is one of the largest allocations.
    QCustomPlot* plot = timeline->plot();
    const double px = timeline->pixelOfEvent(tl.peakEventIndex);
    const double py = plot->yAxis->coordToPixel(double(tl.peakAllocated) * 0.5);
    const int64_t alloc = timeline->allocationAtPixel(px, py);
    REQUIRE(alloc >= 0);
    const Allocation& al = tl.allocations[size_t(alloc)];
    CHECK(al.size >= 10 << 20);
    CHECK(timeline->describeAllocation(size_t(alloc)).contains(QStringLiteral("Allocation of")));
    // Above the curve there is no band.
    CHECK(timeline->allocationAtPixel(px, plot->yAxis->coordToPixel(double(tl.peakAllocated) * 1.1)) == -1);

    // A click on the band selects the allocation (and its event) for every view.
    QTest::mouseClick(plot, Qt::LeftButton, {}, QPoint(int(px), int(py)));
    CHECK(a.explorer().selection()->state().allocation >= 0);
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR"))
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/timeline_by_allocation.png"));

    // Less detail: the same point now falls into the merged band of the smaller ones.
    timeline->setBandDetail(10);
    timeline->replotNow();
    CHECK(timeline->allocationAtPixel(px, plot->yAxis->coordToPixel(double(tl.peakAllocated) * 0.05)) == -1);

    timeline->setMode(TimelineView::Mode::ByCategory);
    CHECK(timeline->plottedStackPeak() == Approx(double(d.analysis.atPeak.total)));
}

TEST_CASE("timeline minimap: shows the visible range and moves the view")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    TimelineView* timeline = a.explorer().timeline();
    TimelineMinimap* map = timeline->minimap();
    QCustomPlot* plot = timeline->plot();
    const QCPRange whole = plot->xAxis->range();
    CHECK(map->visibleLower() == Approx(whole.lower));
    CHECK(map->visibleUpper() == Approx(whole.upper));

    // Zoom the timeline: the frame follows.
    plot->xAxis->setRange(whole.lower + whole.size() * 0.4, whole.lower + whole.size() * 0.5);
    CHECK(map->visibleLower() == Approx(whole.lower + whole.size() * 0.4));
    // A click near the minimap's right end moves the view there, keeping its width.
    const double span = plot->xAxis->range().size();
    QTest::mouseClick(map, Qt::LeftButton, {}, QPoint(map->width() - 20, map->height() / 2));
    CHECK(plot->xAxis->range().size() == Approx(span));
    CHECK(plot->xAxis->range().center() > whole.lower + whole.size() * 0.8);
    // A double click shows the whole run again.
    QTest::mouseDClick(map, Qt::LeftButton, {}, QPoint(map->width() / 2, map->height() / 2));
    CHECK(plot->xAxis->range().size() >= span * 5);
}

TEST_CASE("notes and bookmarks: Ctrl+B, edited in place, saved with the trace, in the postmortem")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    const MemoryTimeline& tl = a.data().timeline();
    BookmarksView* view = a.explorer().bookmarks();
    a.explorer().showView(QStringLiteral("bookmarks"));
    a.explorer().selection()->setEvent(tl.peakEventIndex);
    QTest::keyClick(&a.window, Qt::Key_B, Qt::ControlModifier);
    REQUIRE(view->bookmarks().size() == 1);
    CHECK(view->bookmarks()[0].event == tl.peakEventIndex);
    CHECK(view->table()->item(0, 1)->text().contains(QStringLiteral("the peak")));
    // Title and note are edited in the table.
    view->table()->item(0, 2)->setText(QStringLiteral("OOM here"));
    view->table()->item(0, 3)->setText(QStringLiteral("Adam moments | fp32"));
    CHECK(view->bookmarks()[0].note == QStringLiteral("Adam moments | fp32"));
    a.explorer().selection()->setEvent(100);
    view->addBookmark(100, QStringLiteral("forward starts"));
    CHECK(view->bookmarks().front().event == 100); // sorted by event
    // A double click on the event cell goes there.
    a.explorer().selection()->setEvent(5);
    emit view->table()->cellDoubleClicked(1, 0);
    CHECK(a.explorer().selection()->state().event == tl.peakEventIndex);

    QTemporaryDir dir;
    QString error;
    REQUIRE(a.window.exportPostmortem(dir.filePath(QStringLiteral("pm")), &error));
    QFile md(dir.filePath(QStringLiteral("pm/report.md")));
    REQUIRE(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    CHECK(text.contains(QStringLiteral("## Notes and bookmarks")));
    CHECK(text.contains(QStringLiteral("Adam moments \\| fp32")));

    const QString hrt = dir.filePath(QStringLiteral("noted.hrt"));
    REQUIRE(a.saveAs(hrt));
    Analysed b(hrt);
    const auto& again = b.explorer().bookmarks()->bookmarks();
    REQUIRE(again.size() == 2);
    CHECK(again[1].title == QStringLiteral("OOM here"));
    CHECK(again[1].note == QStringLiteral("Adam moments | fp32"));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR")) {
        b.explorer().showView(QStringLiteral("bookmarks"));
        QApplication::processEvents();
        b.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/bookmarks.png"));
    }
}

TEST_CASE("compare: another snapshot side by side, differences at the peaks, bad files reported")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    CompareView* view = a.explorer().compare();
    a.explorer().showView(QStringLiteral("compare"));
    QSignalSpy ready(view, &CompareView::comparisonReady);
    view->compareWith(QStringLiteral(HEADROOM_SAMPLE_DIR "/pt27_silmont_mem_snapshot.pickle"));
    REQUIRE((ready.count() > 0 || ready.wait(kTimeoutMs)));
    REQUIRE(view->comparison());
    const Comparison& c = *view->comparison();
    CHECK(c.peakA == a.data().timeline().peakAllocated);
    CHECK(c.peakB == 3249143816);
    CHECK(view->summaryTable()->item(0, 1)->text() == QStringLiteral("51.04 GiB"));
    CHECK(view->summaryTable()->item(0, 2)->text() == QStringLiteral("3.03 GiB"));
    CHECK(view->differencesTable()->rowCount() > 0);
    CHECK(view->statusText().contains(QStringLiteral("pt27_silmont_mem_snapshot.pickle")));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR")) {
        QApplication::processEvents();
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/compare.png"));
    }

    // A bad file: a clear error in the view, nothing compared.
    QTemporaryDir dir;
    QFile bad(dir.filePath(QStringLiteral("bad.pickle")));
    REQUIRE(bad.open(QIODevice::WriteOnly));
    bad.write("\x80\x04not a pickle");
    bad.close();
    view->compareWith(bad.fileName());
    REQUIRE((ready.count() > 1 || ready.wait(kTimeoutMs)));
    CHECK_FALSE(view->comparison());
    CHECK(view->statusText().contains(QStringLiteral("bad.pickle")));
}

TEST_CASE("ranks: rank files side by side, the worst marked, a double click shows a rank")
{
    // Two copies named as ranks of one run, and the real file on screen.
    QTemporaryDir dir;
    const QString rank0 = dir.filePath(QStringLiteral("rank0.pickle"));
    const QString rank1 = dir.filePath(QStringLiteral("rank1.pickle"));
    REQUIRE(QFile::copy(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"), rank0));
    REQUIRE(QFile::copy(QStringLiteral(HEADROOM_SAMPLE_DIR "/pt27_silmont_mem_snapshot.pickle"), rank1));
    Analysed a(rank0);
    RanksView* view = a.explorer().ranks();
    a.explorer().showView(QStringLiteral("ranks"));
    CHECK(view->rows().size() == 1);
    QSignalSpy added(view, &RanksView::filesAdded);
    view->addFiles({rank1, dir.filePath(QStringLiteral("missing.pickle"))});
    REQUIRE((added.count() > 0 || added.wait(kTimeoutMs)));
    REQUIRE(view->rows().size() == 2);
    CHECK(view->rows()[0].rank == 0);
    CHECK(view->rows()[1].rank == 1);
    CHECK(view->rows()[0].peakAllocatedBytes == a.data().timeline().peakAllocated);
    CHECK(view->statusText().contains(QStringLiteral("missing.pickle"))); // the error is shown
    CHECK(view->table()->item(0, 3)->foreground().color() == QColor(190, 0, 0)); // rank 0 is the worst

    // A double click on rank 1 shows it in every view; the list of ranks stays.
    QSignalSpy analysed(&a.explorer(), &Explorer::dataAvailable);
    emit view->table()->cellDoubleClicked(1, 0);
    REQUIRE((analysed.count() > 0 || analysed.wait(kTimeoutMs)));
    CHECK(a.window.currentPath().endsWith(QStringLiteral("rank1.pickle")));
    CHECK(a.explorer().data()->timeline().peakAllocated == 3249143816);
    CHECK(view->rows().size() == 2);
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR")) {
        QApplication::processEvents();
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/ranks.png"));
    }
}

TEST_CASE("allocator view: follows the selected event and steps with the arrow keys")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    const ExplorerData& d = a.data();
    const MemoryTimeline& tl = d.timeline();
    a.explorer().showView(QStringLiteral("allocator"));
    AllocatorView* view = a.explorer().allocator();
    QApplication::processEvents();

    // At the peak: the reconstructed state holds exactly the peak's allocated bytes.
    CHECK(view->shownState().event == tl.peakEventIndex);
    CHECK(view->shownState().allocated == tl.peakAllocated);
    CHECK(view->shownState().reserved == tl.reserved[size_t(tl.peakEventIndex)]);
    CHECK_FALSE(view->shownState().recorded);
    CHECK(view->summaryText().contains(QStringLiteral("the peak")));

    // Down arrow in the event list: the next event, for every view.
    QTableView* table = view->eventTable();
    table->setFocus();
    QTest::keyClick(table, Qt::Key_Down);
    CHECK(a.explorer().selection()->state().event == tl.peakEventIndex + 1);
    CHECK(view->shownState().event == tl.peakEventIndex + 1);
    CHECK(view->shownState().allocated == tl.allocated[size_t(tl.peakEventIndex + 1)]);
    QTest::keyClick(table, Qt::Key_Up);
    QTest::keyClick(table, Qt::Key_Up);
    CHECK(a.explorer().selection()->state().event == tl.peakEventIndex - 1);

    // Another view selects an event: the list follows without echoing it back.
    a.explorer().selection()->setEvent(100);
    CHECK(table->currentIndex().row() == 101);
    CHECK(view->shownState().allocated == tl.allocated[100]);
    CHECK(a.explorer().selection()->state().event == 100);

    // After the last event: the snapshot's own blocks.
    a.explorer().selection()->setEvent(d.eventCount() - 1);
    CHECK(view->shownState().recorded);
    CHECK(view->shownState().segments.size() == d.device().segments.size());
    CHECK(view->summaryText().contains(QStringLiteral("recorded blocks")));

    QTemporaryDir dir;
    const QString shot = dir.path() + QStringLiteral("/allocator.png");
    a.explorer().selection()->setEvent(tl.peakEventIndex);
    QApplication::processEvents();
    CHECK(a.window.grab().save(shot));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR"))
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/allocator.png"));
}

TEST_CASE("selecting an allocation row: the timeline and the stack view follow")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    AllocationsView* allocations = a.explorer().allocations();
    TimelineView* timeline = a.explorer().timeline();
    StackView* stacks = a.explorer().stacks();
    QTreeView* table = allocations->table();
    const QModelIndex row = allocations->proxy()->index(2, 0);
    REQUIRE(row.isValid());
    const qlonglong allocation = row.data(AllocationsModel::AllocationRole).toLongLong();
    table->setCurrentIndex(row);
    CHECK(a.explorer().selection()->state().allocation == allocation);
    CHECK(timeline->highlightedAllocation() == allocation);
    CHECK(stacks->highlightedNodes().size() > 1);
    INFO(allocations->stackShown().toStdString());
    CHECK(allocations->stackShown().contains(QStringLiteral("allocation at 0x")));
    CHECK(allocations->stackShown().count(QLatin1Char('\n')) >= 2);

    // Clicking a frame in the stack view filters the table and draws the filter curve.
    a.explorer().showView(QStringLiteral("stacks"));
    QApplication::processEvents();
    REQUIRE(stacks->boxes().size() > 2);
    const StackView::Box box = *std::find_if(stacks->boxes().begin(), stacks->boxes().end(),
                                             [](const StackView::Box& b) { return b.depth == 2; });
    QTest::mouseClick(stacks, Qt::LeftButton, {}, box.rect.center().toPoint());
    const SelectionState& s = a.explorer().selection()->state();
    CHECK(s.stackFilter == stacks->pathTo(box.node));
    CHECK(allocations->proxy()->rowCount() == int(stacks->nodes()[size_t(box.node)].count));
    CHECK(timeline->hasFilterCurve());
    CHECK(allocations->headline().contains(QStringLiteral("under")));
    a.explorer().selection()->setStackFilter({});
    CHECK_FALSE(timeline->hasFilterCurve());
}

TEST_CASE("timeline clicks and drags select events and ranges; diagnosis links select events")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    TimelineView* timeline = a.explorer().timeline();
    QCustomPlot* plot = timeline->plot();
    const QRect r = plot->axisRect()->rect();
    const QPoint at(r.left() + r.width() / 3, r.center().y());
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    const SelectionState& s = a.explorer().selection()->state();
    CHECK(s.event == timeline->eventAtPixel(at.x()));
    CHECK(a.explorer().breakdown()->shownEvent() == s.event);

    QTest::mousePress(plot, Qt::LeftButton, {}, QPoint(r.left() + r.width() / 5, r.center().y()));
    QTest::mouseMove(plot, QPoint(r.left() + r.width() / 4, r.center().y()));
    QTest::mouseMove(plot, QPoint(r.left() + r.width() / 2, r.center().y()));
    QTest::mouseRelease(plot, Qt::LeftButton, {}, QPoint(r.left() + r.width() / 2, r.center().y()));
    REQUIRE(s.hasRange());
    CHECK(s.rangeFirst < s.rangeLast);
    CHECK(a.explorer().allocations()->headline().contains(QStringLiteral("born in")));
    CHECK(a.explorer().breakdown()->heading().contains(QStringLiteral("maximum")));

    a.explorer().diagnosis()->openLink(QUrl(QStringLiteral("event:123")));
    CHECK_FALSE(s.hasRange());
    CHECK(s.event == 123);

    // Legend toggles hide a category's area.
    timeline->setCategoryVisible(TensorCategory::Parameter, false);
    CHECK_FALSE(timeline->categoryVisible(TensorCategory::Parameter));
    timeline->setCategoryVisible(TensorCategory::Parameter, true);
}

TEST_CASE("every view exports to PNG, SVG and PDF; postmortem and Save As")
{
    Analysed a(realTrace("pt27_silmont_mem_snapshot.pickle"));
    QTemporaryDir dir;
    for (ExplorerView* v : a.explorer().views()) {
        for (const char* ext : {"png", "svg", "pdf"}) {
            const QString path = dir.filePath(v->viewId() + QLatin1Char('.') + QLatin1String(ext));
            QString error;
            INFO(path.toStdString());
            CHECK(ViewExport::save(v, path, &error, QSize(900, 500)));
            CHECK(QFileInfo(path).size() > 1000);
        }
        const QImage img = ViewExport::image(v, QSize(300, 200));
        CHECK(img.size() == QSize(300, 200));
    }
    const QString report = dir.filePath(QStringLiteral("postmortem"));
    const QString text = a.postmortemReport(report);
    CHECK(text.contains(QStringLiteral("Peak allocated | 3.03 GiB")));
    CHECK(text.contains(QStringLiteral("timeline.png")));
    CHECK(QFileInfo(report + QStringLiteral("/timeline.png")).size() > 1000);
    CHECK(QFileInfo(report + QStringLiteral("/breakdown_at_peak.png")).size() > 1000);

    CHECK(text.contains(QStringLiteral("## What-if")));
    CHECK(QFileInfo(report + QStringLiteral("/whatif.png")).size() > 1000);
    // The export says it wrote something, and where; the box opens the folder.
    CHECK(a.window.statusBar()->currentMessage().contains(QStringLiteral("report.md")));
    auto* written = a.window.findChild<QMessageBox*>(QStringLiteral("postmortemWrittenBox"));
    REQUIRE(written);
    CHECK(written->text().contains(QDir::toNativeSeparators(report)));
    CHECK(written->findChild<QPushButton*>(QStringLiteral("openPostmortemFolder")));
    written->close();

    const QString hrt = dir.filePath(QStringLiteral("saved.hrt"));
    REQUIRE(a.saveAs(hrt));
    const auto reloaded = Loader::load(hrt.toStdString());
    CHECK(reloaded->timelines[0].peakAllocated == a.data().timeline().peakAllocated);
}

TEST_CASE("Save As off the GUI thread: a failure names the file; closing with jobs running does not wait")
{
    QTemporaryDir dir;
    const QString hrt = dir.filePath(QStringLiteral("no such folder/saved.hrt"));
    {
        Analysed a(realTrace("pt27_silmont_mem_snapshot.pickle"));
        QSignalSpy failed(&a.window, &MainWindow::saveFailed);
        a.window.saveAs(hrt);
        CHECK(a.window.isSaving());
        REQUIRE((failed.count() > 0 || failed.wait(kTimeoutMs)));
        CHECK_FALSE(a.window.isSaving());
        CHECK(failed.at(0).at(0).toString() == hrt);
        auto* box = a.window.findChild<QMessageBox*>(QStringLiteral("saveErrorBox"));
        REQUIRE(box);
        CHECK(box->text().contains(QStringLiteral("saved.hrt")));
        CHECK_FALSE(box->informativeText().isEmpty());
        CHECK_FALSE(QFileInfo::exists(hrt));

        // Every kind of job at once, then the window goes: its destructor returns while
        // they run (their workers see the cancel flag or finish on their own).
        const QString big = realTrace("pt27_kk_memory_ctx128_fullstep.pickle");
        a.window.saveAs(dir.filePath(QStringLiteral("saved.hrt")));
        a.explorer().compare()->compareWith(big);
        a.explorer().ranks()->addFiles({big});
        a.window.openFile(big);
        CHECK(a.window.isSaving());
        CHECK(a.explorer().compare()->isLoading());
        CHECK(a.explorer().ranks()->isLoading());
        CHECK(a.window.loadController()->isLoading());
    }
    // The save that was running when the window closed still completes, atomically.
    REQUIRE(QTest::qWaitFor([&] { return QFileInfo::exists(dir.filePath(QStringLiteral("saved.hrt"))); }, kTimeoutMs));
}

TEST_CASE("stacks: Python frames only by default; the toggle shows the C++ and clears the filter", "[stacks]")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    a.explorer().showView(QStringLiteral("stacks"));
    QApplication::processEvents();
    StackView* view = a.explorer().stacks();
    auto* toggle = view->findChild<QCheckBox*>(QStringLiteral("stackPythonOnly"));
    REQUIRE(toggle);
    CHECK(toggle->isChecked());
    CHECK(a.explorer().selection()->state().pythonOnly);
    const size_t pythonNodes = view->nodes().size();
    const FrameTable& ft = a.data().trace->snapshot.frames;
    // Under the root, the Python stacks start at the user's script, not the interpreter.
    bool script = false;
    for (size_t i = 1; i < view->nodes().size(); ++i)
        if (view->nodes()[i].parent == 0)
            script |= ft.formatFrame(view->nodes()[i].frame).find("benchmark.py") != std::string::npos;
    CHECK(script);

    a.explorer().selection()->setStackFilter({view->nodes()[1].frame});
    toggle->click();
    QApplication::processEvents();
    CHECK_FALSE(a.explorer().selection()->state().pythonOnly);
    CHECK(a.explorer().selection()->state().stackFilter.empty());
    CHECK(view->nodes().size() > pythonNodes); // the C++ frames are back
    toggle->click();
    QApplication::processEvents();
    CHECK(view->nodes().size() == pythonNodes);
}
