// SPDX-License-Identifier: MIT
#include "ui/explorer/explorerview.h"

#include <qcustomplot.h>
#include <QWidget>

namespace headroom {

void ExplorerView::render(QCPPainter* painter, const QSize& size)
{
    // Lay the widget out at the export size (not a scaled copy of a small dock: fonts
    // stay their size), render, and give it its own size back.
    QWidget* w = widget();
    const QSize own = w->size();
    w->resize(size);
    w->render(painter, QPoint(), QRegion(), QWidget::DrawChildren);
    w->resize(own);
}

bool ExplorerView::onScreen(const QWidget* w)
{
    return w->isVisible() && !w->visibleRegion().isEmpty();
}

QSize ExplorerView::exportSize() const
{
    return const_cast<ExplorerView*>(this)->widget()->size();
}

} // namespace headroom
