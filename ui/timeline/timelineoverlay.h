// SPDX-License-Identifier: MIT
#pragma once

#include <qcustomplot.h>

namespace headroom {

class TimelineInteraction;
struct TimelineState;

/// Phase bands, iteration separators, bookmarks, the selected event, range and
/// allocation, and the range being dragged: drawn straight with QPainter in pixel space
/// (thousands of QCPItems would be slow), merging spans narrower than a pixel. Colours and
/// fonts are the plot's (it inherits the view's palette and font).
class TimelineOverlay : public QCPLayerable {
public:
    TimelineOverlay(QCustomPlot* plot, const TimelineState& state);
    /// Where a range drag in progress comes from; none: no drag is drawn.
    void setInteraction(const TimelineInteraction* interaction) { m_interaction = interaction; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
    QRect clipRect() const override { return mParentPlot->axisRect()->rect(); }
    void draw(QCPPainter* painter) override;

private:
    double pixelOfEvent(int64_t event) const;

    const TimelineState& m_state;
    const TimelineInteraction* m_interaction = nullptr;
};

} // namespace headroom
