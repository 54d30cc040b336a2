// SPDX-License-Identifier: MIT
#include "ui/shell/navigationactions.h"

#include "ui/explorer/explorerview.h"
#include "ui/shell/explorer.h"
#include "ui/timeline/timelineview.h"

#include <QAction>
#include <QDockWidget>
#include <QInputDialog>
#include <QMenu>

#include <algorithm>

namespace headroom {

NavigationActions::NavigationActions(Explorer* explorer, QMenu* menu, QObject* parent)
    : QObject(parent)
    , m_explorer(explorer)
{
    auto add = [&](const QString& text, const QString& name, const QKeySequence& key, auto slot) {
        QAction* a = menu->addAction(text, this, slot);
        a->setObjectName(name);
        a->setShortcut(key);
        // Window-wide, but a focused table or text field keeps its own keys.
        a->setShortcutContext(Qt::WindowShortcut);
        return a;
    };
    add(tr("&Next Event"), QStringLiteral("actionNextEvent"), QKeySequence(Qt::ALT | Qt::Key_Right), [this] { stepEvent(1); });
    add(tr("&Previous Event"), QStringLiteral("actionPreviousEvent"), QKeySequence(Qt::ALT | Qt::Key_Left),
        [this] { stepEvent(-1); });
    add(tr("Go to P&eak"), QStringLiteral("actionGoToPeak"), QKeySequence(Qt::CTRL | Qt::Key_P), [this] { goToPeak(); });
    add(tr("&Go to Event\u2026"), QStringLiteral("actionGoToEvent"), QKeySequence(Qt::CTRL | Qt::Key_G), [this] {
        TimelineView* t = m_explorer->timeline();
        const int64_t n = t->shownEventCount();
        if (n <= 0)
            return;
        const int64_t current = m_explorer->selection()->state().hasEvent() ? m_explorer->selection()->state().event : 0;
        bool ok = false;
        const int event = QInputDialog::getInt(t->window(), tr("Go to Event"), tr("Event number (0 to %1):").arg(n - 1),
                                               int(std::clamp<int64_t>(current, 0, n - 1)), 0, int(std::min<int64_t>(n - 1, INT32_MAX)), 1, &ok);
        if (ok)
            goToEvent(event);
    });
    menu->addSeparator();
    add(tr("Zoom &In"), QStringLiteral("actionZoomIn"), QKeySequence::ZoomIn, [this] { m_explorer->timeline()->zoomBy(0.5); });
    add(tr("Zoom &Out"), QStringLiteral("actionZoomOut"), QKeySequence::ZoomOut, [this] { m_explorer->timeline()->zoomBy(2.0); });
    add(tr("Zoom to &Selection"), QStringLiteral("actionZoomToSelection"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F),
        [this] { zoomToSelection(); });
    menu->addSeparator();
    QMenu* views = menu->addMenu(tr("&Views"));
    const Qt::Key digits[] = {Qt::Key_1, Qt::Key_2, Qt::Key_3, Qt::Key_4, Qt::Key_5,
                              Qt::Key_6, Qt::Key_7, Qt::Key_8, Qt::Key_9, Qt::Key_0};
    size_t i = 0;
    for (ExplorerView* v : m_explorer->views()) {
        const QString id = v->viewId();
        QAction* a = views->addAction(v->viewTitle(), this, [this, id] {
            m_explorer->showView(id);
            if (QDockWidget* d = m_explorer->dock(id))
                d->widget()->setFocus(Qt::ShortcutFocusReason);
        });
        a->setObjectName(QStringLiteral("actionShowView_") + id);
        if (i < std::size(digits))
            a->setShortcut(QKeySequence(Qt::ALT | digits[i]));
        ++i;
    }
}

void NavigationActions::stepEvent(int delta)
{
    TimelineView* t = m_explorer->timeline();
    const int64_t n = t->shownEventCount();
    if (n <= 0)
        return;
    const SelectionState& s = m_explorer->selection()->state();
    const int64_t from = s.hasEvent() ? s.event : (delta > 0 ? -2 : n);
    goToEvent(std::clamp<int64_t>(from + delta, -1, n - 1));
}

void NavigationActions::goToPeak()
{
    const int64_t peak = m_explorer->timeline()->peakEvent();
    if (peak >= 0)
        goToEvent(peak);
}

void NavigationActions::goToEvent(int64_t event)
{
    TimelineView* t = m_explorer->timeline();
    if (t->shownEventCount() <= 0)
        return;
    m_explorer->selection()->setEvent(event);
    t->ensureEventVisible(event);
}

void NavigationActions::zoomToSelection()
{
    const SelectionState& s = m_explorer->selection()->state();
    TimelineView* t = m_explorer->timeline();
    if (s.hasRange())
        t->zoomToEvents(s.rangeFirst, s.rangeLast);
    else if (s.hasEvent()) // a window of 1% of the events around it
        t->zoomToEvents(s.event - t->shownEventCount() / 200, s.event + t->shownEventCount() / 200);
}

} // namespace headroom
