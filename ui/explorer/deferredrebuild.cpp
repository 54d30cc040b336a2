// SPDX-License-Identifier: MIT
#include "ui/explorer/deferredrebuild.h"

#include "ui/explorer/explorerview.h"

#include <QEvent>
#include <QWidget>

namespace headroom {

DeferredRebuild::DeferredRebuild(QWidget* widget, std::function<void()> rebuild)
    : QObject(widget)
    , m_widget(widget)
    , m_rebuild(std::move(rebuild))
{
    widget->installEventFilter(this);
}

void DeferredRebuild::watch(QWidget* child)
{
    child->installEventFilter(this);
}

void DeferredRebuild::judgeVisibilityBy(QWidget* w)
{
    m_widget = w;
    watch(w);
}

void DeferredRebuild::request()
{
    m_stale = true;
    if (ExplorerView::onScreen(m_widget))
        ensure();
}

void DeferredRebuild::ensure()
{
    if (!m_stale)
        return;
    m_stale = false; // first: the work may paint, which must not start it again
    m_rebuild();
}

bool DeferredRebuild::eventFilter(QObject* watched, QEvent* event)
{
    if (m_stale && (event->type() == QEvent::Show || event->type() == QEvent::Paint))
        ensure();
    return QObject::eventFilter(watched, event);
}

} // namespace headroom
