// SPDX-License-Identifier: MIT
#include "ui/plot/plotstyle.h"

#include <qcustomplot.h>

namespace headroom {

void applyAxisColors(QCPAxis* axis, const QColor& text, const QPen& gridPen)
{
    axis->setBasePen(QPen(text));
    axis->setTickPen(QPen(text));
    axis->setSubTickPen(QPen(text));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(gridPen);
}

} // namespace headroom
