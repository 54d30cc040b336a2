// SPDX-License-Identifier: MIT
#pragma once

#include <qcustomplot.h>

namespace headroom {

class TimelineView;

/// Phase bands, iteration separators, the selected event, range and allocation: drawn
/// straight with QPainter in pixel space (thousands of QCPItems would be slow), merging
/// spans narrower than a pixel.
class TimelineOverlay : public QCPLayerable {
public:
    TimelineOverlay(QCustomPlot* plot, TimelineView* view);

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
    QRect clipRect() const override { return mParentPlot->axisRect()->rect(); }
    void draw(QCPPainter* painter) override;

private:
    TimelineView* m_view;
};

} // namespace headroom
