// SPDX-License-Identifier: MIT
#include "ui/timeline/allocationbandlayer.h"

#include "core/io/loader.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/timelinestate.h"
#include "ui/timeline/timelinestyle.h"

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

QRgb bandColor(const ExplorerData& data, uint32_t allocation)
{
    const TensorCategory c = allocation < data.analysis.classes.size() ? data.analysis.classes[allocation].category
                                                                        : TensorCategory::Unknown;
    // A stable per-allocation shade: neighbours of one category stay distinguishable.
    const uint32_t h = allocation * 2654435761u;
    const int factor = 78 + int(h >> 27); // 78..109 %
    return categoryColor(c).lighter(factor).rgb();
}

} // namespace

AllocationBandLayer::AllocationBandLayer(QCustomPlot* plot, const TimelineState& state)
    : QCPLayerable(plot, QStringLiteral("main"))
    , m_state(state)
{
}

int AllocationBandLayer::columnAt(double px) const
{
    const int c = int(std::floor(px)) - m_rect.left();
    return c >= 0 && size_t(c) < m_columns.columns() ? c : -1;
}

void AllocationBandLayer::relayout(const QRect& rect)
{
    const TimelineState& v = m_state;
    QCPAxis* x = mParentPlot->xAxis;
    // Column c covers the keys [pixel c, pixel c + 1): its events start at the first
    // event whose key is at or after the column's left edge.
    std::vector<int64_t> bounds(size_t(rect.width()) + 1);
    for (int c = 0; c <= rect.width(); ++c)
        bounds[size_t(c)] = v.firstEventAtOrAfterKey(x->pixelToCoord(rect.left() + c));
    m_columns = v.bands.layout(*v.timeline, bounds);
    m_rect = rect;
    m_lower = x->range().lower;
    m_upper = x->range().upper;
    m_valid = true;
}

void AllocationBandLayer::draw(QCPPainter* painter)
{
    const TimelineState& v = m_state;
    if (!v.data || !v.timeline || v.eventCount() == 0)
        return;
    const QRect rect = clipRect();
    if (rect.width() <= 0 || rect.height() <= 0)
        return;
    QCPAxis* x = mParentPlot->xAxis;
    if (!m_valid || rect != m_rect || x->range().lower != m_lower || x->range().upper != m_upper)
        relayout(rect);

    if (m_image.size() != rect.size())
        m_image = QImage(rect.size(), QImage::Format_ARGB32_Premultiplied);
    m_image.fill(Qt::transparent);
    QCPAxis* y = mParentPlot->yAxis;
    const int h = rect.height();
    auto row = [&](double bytes) { // image row of a byte value (0 = top), clamped
        return std::clamp(int(std::lround(y->coordToPixel(bytes))) - rect.top(), 0, h);
    };
    const QRgb smallColor = QColor(0xb8, 0xbc, 0xc0).rgb();
    const QRgb selected = timelinestyle::kSelectionColor.rgb();
    const int64_t selectedAllocation = v.selection.allocation;
    const auto& allocs = v.timeline->allocations;
    const int firstKey = int(std::floor(x->coordToPixel(v.keyOf(-1)))) - rect.left();
    const int lastKey = int(std::ceil(x->coordToPixel(v.keyOf(v.eventCount() - 1)))) - rect.left();
    uchar* bits = m_image.bits();
    const qsizetype stride = m_image.bytesPerLine();
    auto fill = [&](int col, int from, int to, QRgb color) { // rows [from, to) in column col
        for (int r = std::max(0, from); r < std::min(h, to); ++r)
            reinterpret_cast<QRgb*>(bits + r * stride)[col] = color;
    };
    for (int c = 0; c < int(m_columns.columns()); ++c) {
        if (c < firstKey || c > lastKey) // outside the trace: nothing to draw
            continue;
        const int base = row(0);
        int top = row(double(m_columns.small[size_t(c)]));
        fill(c, top, base, smallColor);
        for (uint32_t s = m_columns.offsets[size_t(c)]; s < m_columns.offsets[size_t(c) + 1]; ++s) {
            const BandSlice& slice = m_columns.slices[s];
            const int bandTop = row(double(slice.bottom + allocs[slice.allocation].size));
            if (bandTop >= top)
                continue; // thinner than a pixel here: the neighbours cover it
            const QRgb color = int64_t(slice.allocation) == selectedAllocation ? selected : bandColor(*v.data, slice.allocation);
            fill(c, bandTop, top, color);
            if (top - bandTop >= 4) // a hairline between bands taller than a few pixels
                fill(c, top - 1, top, QColor::fromRgb(color).darker(125).rgb());
            top = bandTop;
        }
    }
    painter->drawImage(rect.topLeft(), m_image);
}

} // namespace headroom
