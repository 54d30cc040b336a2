// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocationbands.h"

#include <qcustomplot.h>

#include <QImage>

namespace headroom {

struct TimelineState;

/// The timeline's by-allocation mode (PyTorch's Active Memory Timeline): every one of the
/// largest allocations as its own band, stacked by birth, the rest merged into one grey
/// band at the bottom. Each pixel column shows the event of its bucket where the allocated
/// curve peaks (AllocationBands::layout), and the columns are rasterised into one image:
/// the cost is the plot's pixel area, not the number of bands, so a million events and a
/// thousand bands still draw in a few milliseconds. Bands take their category's colour,
/// lightened or darkened per allocation so neighbours stay apart; the selected allocation
/// is drawn in the selection colour.
class AllocationBandLayer : public QCPLayerable {
public:
    AllocationBandLayer(QCustomPlot* plot, const TimelineState& state);

    /// The columns drawn last (hover and click look allocations up in them).
    const BandColumns& columns() const { return m_columns; }
    /// The column under a pixel x; -1 outside the plot.
    int columnAt(double px) const;
    /// Forget the cached layout (new data, new detail, new range).
    void invalidate() { m_valid = false; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
    QRect clipRect() const override { return mParentPlot->axisRect()->rect(); }
    void draw(QCPPainter* painter) override;

private:
    void relayout(const QRect& rect);

    const TimelineState& m_state;
    BandColumns m_columns;
    QRect m_rect;       ///< the axis rect the columns were laid out for
    double m_lower = 0, m_upper = 0;
    bool m_valid = false;
    QImage m_image;
};

} // namespace headroom
