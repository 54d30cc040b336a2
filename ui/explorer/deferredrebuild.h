// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>

#include <functional>

class QWidget;

namespace headroom {

/// Work a view puts off while nothing of it can be seen (a background dock tab, a hidden
/// window): filling a table, laying out a tree, replotting a chart. request() does the
/// work now when the widget is on screen, else marks it stale; stale work is done before
/// the widget, or a watched child such as a scroll area's viewport, is next shown or
/// painted, or when ensure() is called (an export, a test reading what the view shows).
/// Every view that defers shares this one rule, so a hidden panel costs nothing in the
/// event-loop turn that delivers a new analysis.
class DeferredRebuild : public QObject {
public:
    DeferredRebuild(QWidget* widget, std::function<void()> rebuild);

    /// Show and paint events of `child` also bring stale work up to date.
    void watch(QWidget* child);
    /// "On screen" is `w`'s (watched too) instead of the widget's own: for a widget in a scroll
    /// area, whose own visible region is empty while it is scrolled out of view.
    void judgeVisibilityBy(QWidget* w);
    /// The work is needed: done now when the widget is on screen, else marked stale.
    void request();
    /// The work is needed but not now (the caller knows more is coming).
    void invalidate() { m_stale = true; }
    /// Does stale work now.
    void ensure();
    bool stale() const { return m_stale; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* m_widget;
    std::function<void()> m_rebuild;
    bool m_stale = false;
};

} // namespace headroom
