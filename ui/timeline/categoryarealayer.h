// SPDX-License-Identifier: MIT
#pragma once

#include <qcustomplot.h>

namespace headroom {

struct TimelineState;

/// The category areas, drawn as one run of rectangles per pixel column: where several
/// samples share a column the one with the largest total wins (the peak is never lost),
/// and a sample holds its values until the next one (step-left, like the curves). A
/// million-event trace stays a few thousand fillRects per frame, where eight filled
/// QCPGraph polygons cost hundreds of milliseconds.
class CategoryAreaLayer : public QCPLayerable {
public:
    CategoryAreaLayer(QCustomPlot* plot, const TimelineState& state);

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
    QRect clipRect() const override { return mParentPlot->axisRect()->rect(); }
    void draw(QCPPainter* painter) override;

private:
    const TimelineState& m_state;
};

} // namespace headroom
