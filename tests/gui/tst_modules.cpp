// SPDX-License-Identifier: MIT
// The Modules view (issue 30): the module tree whose rows add up to what is alive, from the
// recorder's names or from the stacks alone, and a click on a module filtering the timeline,
// the allocations and the stacks to the same allocations.
#include "analysedwindow.h"

#include "core/replay/replay.h"
#include "ui/timeline/timelineview.h"
#include "ui/views/allocationsview.h"
#include "ui/views/moduleview.h"
#include "ui/views/stackview.h"

#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTest>
#include <QToolButton>
#include <QTreeWidget>

using namespace headroom;

namespace {

QTreeWidgetItem* findRow(QTreeWidget* tree, const QString& key)
{
    for (QTreeWidgetItemIterator it(tree); *it; ++it)
        if (ModuleView::filterKey(*it) == key)
            return *it;
    return nullptr;
}

/// Clicks the row as a person would: scrolled into view, then the mouse on its name.
void clickRow(QTreeWidget* tree, QTreeWidgetItem* item)
{
    tree->scrollToItem(item);
    QApplication::processEvents();
    const QRect r = tree->visualItemRect(item);
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, QPoint(std::max(r.left(), 0) + 40, r.center().y()));
    QApplication::processEvents();
}

/// The three filtered views hold what the module's row says: its count of live rows, its bytes
/// on the timeline's curve at the peak and at the stack tree's root.
void checkFilteredTo(Analysed& a, QTreeWidgetItem* row)
{
    const qlonglong bytes = row->data(1, Qt::UserRole).toLongLong();
    const qlonglong count = row->data(2, Qt::UserRole).toLongLong();
    REQUIRE(bytes > 0);
    AllocationsView* allocations = a.explorer().allocations();
    CHECK(allocations->proxy()->rowCount() == count);
    CHECK(allocations->headline().contains(QStringLiteral("in module")));
    TimelineView* timeline = a.explorer().timeline();
    REQUIRE(timeline->hasFilterCurve());
    CHECK(timeline->filterCurveAt(a.data().timeline().peakEventIndex) == bytes);
    StackView* stacks = a.explorer().stacks();
    REQUIRE_FALSE(stacks->nodes().empty());
    CHECK(stacks->nodes()[0].bytes == bytes);
}

} // namespace

TEST_CASE("the Modules view: the recorder's module tree, its rows adding up to what is alive", "[modules]")
{
    Analysed a(QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/cpu/llama_base_shapes.pickle"));
    a.explorer().showView(QStringLiteral("modules"));
    QApplication::processEvents();
    ModuleView* view = a.explorer().modules();
    QTreeWidget* tree = view->tree();
    REQUIRE(tree->topLevelItemCount() >= 2);
    // The top-level rows (modules and what lies outside them) add up to the live total.
    qlonglong sum = 0;
    QTreeWidgetItem* blocks = nullptr;
    for (int i = 0; i < tree->topLevelItemCount(); ++i) {
        sum += tree->topLevelItem(i)->data(1, Qt::UserRole).toLongLong();
        if (tree->topLevelItem(i)->text(0) == QStringLiteral("blocks"))
            blocks = tree->topLevelItem(i);
    }
    const MemoryTimeline& tl = a.data().timeline();
    CHECK(sum == tl.peakAllocated);
    REQUIRE(blocks);
    // A parent holds its children: blocks > blocks > 0 > self_attn.
    REQUIRE(blocks->childCount() == 1);
    QTreeWidgetItem* layers = blocks->child(0);
    qlonglong children = 0;
    for (int i = 0; i < layers->childCount(); ++i)
        children += layers->child(i)->data(1, Qt::UserRole).toLongLong();
    CHECK(children == layers->data(1, Qt::UserRole).toLongLong());
    CHECK(view->headline().contains(QStringLiteral("names from the recorder")));
    // MemTracker's forward moments: before, peak and after the layer's forward (columns 3-5).
    REQUIRE(tree->headerItem()->text(4) == QStringLiteral("Peak in its forward"));
    QTreeWidgetItem* layer0 = layers->child(0);
    const qlonglong before = layer0->data(3, Qt::UserRole).toLongLong(), peak = layer0->data(4, Qt::UserRole).toLongLong();
    CHECK(before > 0);
    CHECK(peak > before);
    CHECK(layer0->data(5, Qt::UserRole).toLongLong() <= peak);
    CHECK(view->headline().contains(QStringLiteral("Before / peak / after its forward")));
    // The iteration numbered as the Diagnosis and the timeline number it (issue 49: it said one more).
    const int peakIteration = a.data().analysis.phases.iterationOf(tl.peakEventIndex);
    CHECK(view->headline().contains(QStringLiteral("in iteration %1's forward").arg(peakIteration)));

    // Another event: the view follows the selection.
    const int64_t early = tl.peakEventIndex / 4;
    a.explorer().selection()->setEvent(early);
    QApplication::processEvents();
    CHECK(view->headline().contains(QStringLiteral("event %1").arg(early)));
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR")) {
        a.explorer().selection()->setEvent(tl.peakEventIndex);
        QApplication::processEvents();
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/modules-recorded.png"));
    }
}

TEST_CASE("the Modules view without recorder names: each module is its forward frame", "[modules]")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    a.explorer().showView(QStringLiteral("modules"));
    QApplication::processEvents();
    ModuleView* view = a.explorer().modules();
    CHECK(view->headline().contains(QStringLiteral("no module names in the file")));
    QTreeWidget* tree = view->tree();
    qlonglong sum = 0;
    bool forward = false;
    for (int i = 0; i < tree->topLevelItemCount(); ++i) {
        sum += tree->topLevelItem(i)->data(1, Qt::UserRole).toLongLong();
        forward |= tree->topLevelItem(i)->text(0).endsWith(QStringLiteral("transformer.py:22:forward"));
    }
    CHECK(sum == a.data().timeline().peakAllocated);
    CHECK(forward);
}

TEST_CASE("a click on a recorded module filters the timeline, the allocations and the stacks to it", "[modules]")
{
    Analysed a(QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/cpu/llama_base_shapes.pickle"));
    a.explorer().showView(QStringLiteral("modules"));
    QApplication::processEvents();
    QTreeWidget* tree = a.explorer().modules()->tree();
    // A parent row keeps its children's allocations: blocks.blocks.0 holds its attention's.
    QTreeWidgetItem* layer = findRow(tree, QStringLiteral("n:blocks.blocks.0"));
    REQUIRE(layer);
    clickRow(tree, layer);
    const SelectionState& s = a.explorer().selection()->state();
    CHECK(s.moduleFilter == "n:blocks.blocks.0");
    CHECK(s.moduleLabel == "blocks.blocks.0");
    checkFilteredTo(a, layer);
    CHECK(layer->font(0).bold());

    // A second click on the same module shows everything again.
    clickRow(tree, findRow(tree, QStringLiteral("n:blocks.blocks.0")));
    CHECK(s.moduleFilter.empty());
    CHECK_FALSE(a.explorer().timeline()->hasFilterCurve());
    CHECK(a.explorer().stacks()->nodes()[0].bytes == a.data().timeline().peakAllocated);

    // What lies outside every module's forward is a filter too; "Clear filters" clears it.
    QTreeWidgetItem* outside = findRow(tree, QStringLiteral("-"));
    REQUIRE(outside);
    clickRow(tree, outside);
    checkFilteredTo(a, outside);
    a.explorer().allocations()->findChild<QToolButton*>(QStringLiteral("clearStackFilter"))->click();
    QApplication::processEvents();
    CHECK(s.moduleFilter.empty());
}

TEST_CASE("a module named by its forward frame filters the views on a plain snapshot", "[modules]")
{
    Analysed a(realTrace("pt27_kk_memory_ctx128_fullstep.pickle"));
    a.explorer().showView(QStringLiteral("modules"));
    QApplication::processEvents();
    QTreeWidget* tree = a.explorer().modules()->tree();
    QTreeWidgetItem* row = nullptr;
    for (int i = 0; i < tree->topLevelItemCount() && !row; ++i)
        if (ModuleView::filterKey(tree->topLevelItem(i)).startsWith(QStringLiteral("f:")))
            row = tree->topLevelItem(i);
    REQUIRE(row);
    clickRow(tree, row);
    CHECK(a.explorer().selection()->state().moduleLabel == row->text(0).toStdString());
    checkFilteredTo(a, row);
    if (qEnvironmentVariableIsSet("HEADROOM_SHOT_DIR"))
        a.window.grab().save(qEnvironmentVariable("HEADROOM_SHOT_DIR") + QStringLiteral("/modules-filter.png"));
}
