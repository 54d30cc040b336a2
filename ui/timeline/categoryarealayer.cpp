// SPDX-License-Identifier: MIT
#include "ui/timeline/categoryarealayer.h"

#include "core/io/loader.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/timelinestate.h"
#include "ui/timeline/timelinestyle.h"

#include <algorithm>
#include <cmath>

namespace headroom {

using namespace timelinestyle;

CategoryAreaLayer::CategoryAreaLayer(QCustomPlot* plot, const TimelineState& state)
    : QCPLayerable(plot, QStringLiteral("main"))
    , m_state(state)
{
}

void CategoryAreaLayer::draw(QCPPainter* painter)
{
    const auto& keys = m_state.areaKeys;
    const auto& stacks = m_state.areaStacks;
    if (keys.empty())
        return;
    const auto& order = categoryStackOrder();
    std::array<QColor, kTensorCategoryCount> colors;
    for (size_t p = 0; p < order.size(); ++p)
        colors[p] = categoryColor(order[p]);
    if (m_state.areaTotalOnly) {
        // Every level holds the total: one area, the total's translucent colour mixed
        // with the background here: an opaque fill is a plain memory fill where a
        // translucent one blends every pixel.
        const QColor base = mParentPlot->palette().color(QPalette::Base);
        constexpr double a = kAllocatedFillAlpha / 255.0;
        colors[0] = QColor::fromRgbF(float(kAllocatedColor.redF() * a + base.redF() * (1 - a)),
                                     float(kAllocatedColor.greenF() * a + base.greenF() * (1 - a)),
                                     float(kAllocatedColor.blueF() * a + base.blueF() * (1 - a)));
    }
    QCPAxis* x = mParentPlot->xAxis;
    QCPAxis* y = mParentPlot->yAxis;
    const double y0 = y->coordToPixel(0);
    const QRect rect = clipRect();
    auto drawRun = [&](size_t sample, double left, double right) {
        if (right < rect.left() || left > rect.right())
            return;
        const auto& cum = stacks[sample];
        double bottom = y0;
        for (size_t p = 0; p < order.size(); ++p) {
            const double top = y->coordToPixel(cum[p]);
            if (bottom - top >= 0.5)
                painter->fillRect(QRectF(left, top, right - left, bottom - top), colors[p]);
            bottom = std::min(bottom, top);
        }
    };
    size_t best = 0;
    double column = std::floor(x->coordToPixel(keys[0]));
    for (size_t i = 1; i <= keys.size(); ++i) {
        // The last sample is the last event: the areas end there, as the curves do.
        const double px = i < keys.size() ? std::floor(x->coordToPixel(keys[i])) : column + 1;
        if (px <= column) { // same column: keep the sample with the largest total
            if (stacks[i].back() > stacks[best].back())
                best = i;
            continue;
        }
        drawRun(best, column, std::max(column + 1, px));
        best = i;
        column = px;
    }
}

} // namespace headroom
