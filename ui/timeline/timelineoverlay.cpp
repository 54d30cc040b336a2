// SPDX-License-Identifier: MIT
#include "ui/timeline/timelineoverlay.h"

#include "core/io/loader.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/timelineinteraction.h"
#include "ui/timeline/timelinestate.h"
#include "ui/timeline/timelinestyle.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace headroom {

using namespace timelinestyle;

TimelineOverlay::TimelineOverlay(QCustomPlot* plot, const TimelineState& state)
    : QCPLayerable(plot, QStringLiteral("overlay"))
    , m_state(state)
{
}

double TimelineOverlay::pixelOfEvent(int64_t event) const
{
    return mParentPlot->xAxis->coordToPixel(m_state.keyOf(event));
}

void TimelineOverlay::draw(QCPPainter* painter)
{
    const TimelineState& v = m_state;
    if (v.eventCount() == 0)
        return;
    const QRect rect = mParentPlot->axisRect()->rect();
    const QColor text = mParentPlot->palette().color(QPalette::WindowText);
    const QFontMetrics metrics = mParentPlot->fontMetrics();
    if (v.data) {
        // Iteration separators: dashed lines at every iteration's first event.
        const auto& iterations = v.data->analysis.phases.iterations;
        if (iterations.size() > 1) {
            // Solid cosmetic lines (a dash pattern is stroked, not blitted); where several
            // separators fall within a few pixels only the first is drawn.
            QColor c = text;
            c.setAlpha(90);
            painter->setPen(QPen(c, 0));
            double lastX = -1e9;
            for (size_t i = 1; i < iterations.size(); ++i) {
                const double x = std::round(pixelOfEvent(iterations[i].startEvent - 1));
                if (x < rect.left() || x > rect.right() || x - lastX < 3)
                    continue;
                painter->drawLine(QPointF(x, rect.top()), QPointF(x, rect.bottom()));
                lastX = x;
            }
        }
        // Phase bands along the top, named where they are wide enough.
        const double h = std::max(double(metrics.height() + 2), rect.height() * kPhaseBandRatio);
        // A whole run has a thousand spans and a handful of phase names: measure each once.
        std::array<int, kPhaseCount> nameWidth{};
        for (size_t p = 0; p < kPhaseCount; ++p)
            nameWidth[p] = metrics.horizontalAdvance(phaseDisplayName(Phase(p)));
        double lastRight = -1e9;
        for (const PhaseSpan& s : v.data->analysis.phases.spans) {
            const double x0 = pixelOfEvent(s.startEvent - 1);
            const double x1 = pixelOfEvent(s.endEvent);
            if (x1 < rect.left() || x0 > rect.right())
                continue;
            if (x1 <= lastRight) // sub-pixel span: the previous band already covers it
                continue;
            const double left = std::max(x0, lastRight);
            const QRectF band(left, rect.top(), std::max(1.0, x1 - left), h);
            QColor fill = phaseColor(s.phase);
            fill.setAlpha(170);
            painter->fillRect(band, fill);
            if (band.width() > nameWidth[size_t(s.phase)] + 6) {
                painter->setPen(QColor(20, 20, 20));
                painter->drawText(band, Qt::AlignCenter, phaseDisplayName(s.phase));
            }
            lastRight = std::max(left + 1.0, x1);
        }
    }
    // Bookmarks: a flag under the phase bands with the title where there is room.
    {
        const double y = rect.top() + std::max(double(metrics.height() + 2), rect.height() * kPhaseBandRatio) + 2;
        const QColor flag(0x6a, 0x3d, 0x9a);
        double lastRight = -1e9;
        for (const auto& [event, title] : v.bookmarks) {
            const double x = std::round(pixelOfEvent(event));
            if (x < rect.left() || x > rect.right())
                continue;
            painter->setPen(QPen(flag, 0));
            painter->drawLine(QPointF(x, y), QPointF(x, y + 14));
            const QPointF tri[3] = {{x, y}, {x + 8, y + 3.5}, {x, y + 7}};
            painter->setBrush(flag);
            painter->drawPolygon(tri, 3);
            const double textWidth = metrics.horizontalAdvance(title);
            if (x + 10 > lastRight && x + 10 + textWidth < rect.right()) {
                painter->setPen(flag);
                painter->drawText(QPointF(x + 10, y + metrics.ascent() - 1), title);
                lastRight = x + 14 + textWidth;
            }
        }
        painter->setBrush(Qt::NoBrush);
    }
    // The selected allocation: its lifetime and size.
    if (v.data && v.selection.allocation >= 0
        && size_t(v.selection.allocation) < v.timeline->allocations.size()) {
        const Allocation& a = v.timeline->allocations[size_t(v.selection.allocation)];
        const double x0 = pixelOfEvent(a.start == Allocation::kBeforeWindow ? -1 : a.start - 1);
        const double x1 = pixelOfEvent(a.end == Allocation::kStillAlive ? v.eventCount() - 1 : a.end - 1);
        const double y0 = mParentPlot->yAxis->coordToPixel(0);
        const double y1 = mParentPlot->yAxis->coordToPixel(double(a.size));
        QColor fill = kSelectionColor;
        fill.setAlpha(90);
        const QRectF r(QPointF(x0, std::min(y1, y0 - 3)), QPointF(std::max(x1, x0 + 2), y0));
        painter->fillRect(r, fill);
        painter->setPen(QPen(kSelectionColor, 2));
        painter->drawRect(r);
    }
    // The selected range.
    const SelectionState& s = v.selection;
    auto shade = [&](double xa, double xb) {
        QColor fill = kSelectionColor;
        fill.setAlpha(45);
        const QRectF r(QPointF(std::min(xa, xb), rect.top()), QPointF(std::max(xa, xb), rect.bottom()));
        painter->fillRect(r, fill);
        painter->setPen(QPen(kSelectionColor, 1));
        painter->drawLine(r.topLeft(), r.bottomLeft());
        painter->drawLine(r.topRight(), r.bottomRight());
    };
    if (m_interaction && m_interaction->rangeDragging())
        shade(m_interaction->pressX(), m_interaction->dragX());
    else if (s.hasRange())
        shade(pixelOfEvent(s.rangeFirst - 1), pixelOfEvent(s.rangeLast));
    // The selected event.
    if (s.hasEvent()) {
        const double x = pixelOfEvent(s.event);
        painter->setPen(QPen(kSelectionColor, 2));
        painter->drawLine(QPointF(x, rect.top()), QPointF(x, rect.bottom()));
    }
}

} // namespace headroom
