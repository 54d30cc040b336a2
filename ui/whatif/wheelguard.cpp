// SPDX-License-Identifier: MIT
#include "ui/whatif/wheelguard.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QSlider>
#include <QWheelEvent>

namespace headroom {

namespace {

bool guarded(const QObject* o)
{
    // Sliders, not scroll bars: a scroll bar's wheel is the scrolling.
    return qobject_cast<const QComboBox*>(o) || qobject_cast<const QAbstractSpinBox*>(o) ||
           qobject_cast<const QSlider*>(o);
}

/// The scroll area the panel scrolls in (its viewport takes the wheel), if any.
QWidget* scrollViewport(QWidget* w)
{
    for (QWidget* p = w->parentWidget(); p; p = p->parentWidget())
        if (auto* area = qobject_cast<QAbstractScrollArea*>(p))
            return area->viewport();
    return nullptr;
}

} // namespace

void WheelGuard::install(QWidget* root)
{
    auto* g = new WheelGuard(root);
    for (QWidget* w : root->findChildren<QWidget*>())
        g->guard(w);
}

void WheelGuard::guard(QWidget* w)
{
    if (!guarded(w))
        return;
    // Qt::WheelFocus would let the wheel itself take the focus (and then change the value).
    if (w->focusPolicy() == Qt::WheelFocus)
        w->setFocusPolicy(Qt::StrongFocus);
    w->installEventFilter(this);
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() != QEvent::Wheel || !guarded(watched))
        return false;
    auto* w = static_cast<QWidget*>(watched);
    if (w->hasFocus())
        return false;
    if (QWidget* viewport = scrollViewport(w))
        QApplication::sendEvent(viewport, event);
    return true; // the control keeps its value
}

} // namespace headroom
