// SPDX-License-Identifier: MIT
#include "ui/timeline/timelineinteraction.h"

#include "core/analysis/timelinebands.h"
#include "core/io/loader.h"
#include "ui/explorer/selection.h"
#include "ui/timeline/allocationbandlayer.h"
#include "ui/timeline/timelineminimap.h"
#include "ui/timeline/timelinestate.h"
#include "ui/timeline/timelinetooltip.h"

#include <qcustomplot.h>

#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {
constexpr int64_t kMaxTooltipScan = 200000; // events inspected per hover pixel
constexpr double kDragThresholdPx = 4.0;
} // namespace

TimelineInteraction::TimelineInteraction(QCustomPlot* plot, const TimelineState& state,
                                         const AllocationBandLayer& bands, TimelineMinimap* minimap,
                                         Selection* selection, QObject* parent)
    : QObject(parent)
    , m_plot(plot)
    , m_state(state)
    , m_bands(bands)
    , m_selection(selection)
{
    m_plot->setInteractions(QCP::iRangeZoom);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    connect(m_plot, &QCustomPlot::mousePress, this, &TimelineInteraction::onMousePress);
    connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineInteraction::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &TimelineInteraction::onMouseRelease);
    connect(minimap, &TimelineMinimap::rangeRequested, this, [this](double lower, double upper) {
        m_plot->xAxis->setRange(lower, upper);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
}

void TimelineInteraction::zoomToEvents(int64_t first, int64_t last)
{
    const TimelineState& v = m_state;
    if (v.eventCount() <= 0)
        return;
    first = std::clamp<int64_t>(std::min(first, last), -1, v.eventCount() - 1);
    last = std::clamp<int64_t>(std::max(first, last), -1, v.eventCount() - 1);
    double lo = v.keyOf(first), hi = v.keyOf(last);
    const double pad = std::max((hi - lo) * 0.03, v.eventIndexAxis() ? 1.0 : 1e-3);
    m_plot->xAxis->setRange(lo - pad, hi + pad);
}

void TimelineInteraction::zoomBy(double factor)
{
    if (!(factor > 0))
        return;
    m_plot->xAxis->scaleRange(factor, m_plot->xAxis->range().center());
}

void TimelineInteraction::ensureEventVisible(int64_t event)
{
    const TimelineState& v = m_state;
    if (v.eventCount() <= 0)
        return;
    const double key = v.keyOf(std::clamp<int64_t>(event, -1, v.eventCount() - 1));
    const QCPRange r = m_plot->xAxis->range();
    if (key >= r.lower && key <= r.upper)
        return;
    m_plot->xAxis->setRange(key - r.size() / 2, key + r.size() / 2);
}

void TimelineInteraction::limitZoomOut(const QCPRange& range)
{
    const TimelineState& v = m_state;
    if (v.eventCount() <= 0)
        return;
    // Never zoom out past the whole trace (the wheel would shrink it to a line).
    const double lo = v.keyOf(-1), hi = std::max(v.keyOf(v.eventCount() - 1), lo + 1);
    const double margin = (hi - lo) * 0.015;
    if (range.size() > (hi - lo) + 2 * margin)
        m_plot->xAxis->setRange(lo - margin, hi + margin);
}

int64_t TimelineInteraction::eventAtPixel(double px) const
{
    const TimelineState& v = m_state;
    if (v.eventCount() == 0)
        return -1;
    // Of the events under this pixel, the one with the most memory allocated: that is
    // the top of what the min/max-downsampled curve draws there.
    const int64_t a = v.eventAtKey(m_plot->xAxis->pixelToCoord(px - 0.5));
    const int64_t b = v.eventAtKey(m_plot->xAxis->pixelToCoord(px + 0.5));
    int64_t best = a;
    const int64_t end = std::min(b, a + kMaxTooltipScan);
    for (int64_t i = a + 1; i <= end; ++i)
        if (v.timeline->allocated[size_t(i)] > v.timeline->allocated[size_t(best)])
            best = i;
    return best;
}

int64_t TimelineInteraction::allocationAtPixel(double px, double py) const
{
    const TimelineState& v = m_state;
    if (!v.byAllocation || !v.data || !v.timeline)
        return -1;
    const int column = m_bands.columnAt(px);
    if (column < 0)
        return -1;
    const double bytes = m_plot->yAxis->pixelToCoord(py);
    if (bytes < 0)
        return -1;
    const BandSlice* s = m_bands.columns().sliceAt(*v.timeline, size_t(column), int64_t(bytes));
    return s ? int64_t(s->allocation) : -1;
}

void TimelineInteraction::onMousePress(QMouseEvent* event)
{
    if (m_state.eventCount() == 0 || !m_plot->axisRect()->rect().contains(event->position().toPoint()))
        return;
    m_pressX = m_dragX = event->position().x();
    if (event->button() == Qt::LeftButton) {
        m_drag = Drag::Pending;
    } else if (event->button() == Qt::RightButton || event->button() == Qt::MiddleButton) {
        m_drag = Drag::Pan;
        m_panLower = m_plot->xAxis->range().lower;
        m_panUpper = m_plot->xAxis->range().upper;
    }
}

void TimelineInteraction::onMouseMove(QMouseEvent* event)
{
    const QPointF pos = event->position();
    if (m_drag == Drag::Pending && std::abs(pos.x() - m_pressX) >= kDragThresholdPx)
        m_drag = Drag::Range;
    if (m_drag == Drag::Range) {
        m_dragX = pos.x();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    if (m_drag == Drag::Pan) {
        const double dx = m_plot->xAxis->pixelToCoord(m_pressX) - m_plot->xAxis->pixelToCoord(pos.x());
        m_plot->xAxis->setRange(m_panLower + dx, m_panUpper + dx);
        return;
    }
    if (event->buttons() != Qt::NoButton || !m_plot->axisRect()->rect().contains(pos.toPoint())) {
        QToolTip::hideText();
        return;
    }
    const int64_t index = eventAtPixel(pos.x());
    if (index < 0) {
        QToolTip::hideText();
        return;
    }
    if (const int64_t alloc = allocationAtPixel(pos.x(), pos.y()); alloc >= 0) {
        const int column = m_bands.columnAt(pos.x());
        QToolTip::showText(event->globalPosition().toPoint(),
                           TimelineTooltip(m_state).allocation(size_t(alloc), m_bands.columns().events[size_t(column)]),
                           m_plot);
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), TimelineTooltip(m_state).event(index), m_plot);
}

void TimelineInteraction::onMouseRelease(QMouseEvent* event)
{
    const Drag drag = m_drag;
    m_drag = Drag::None;
    Selection* selection = m_selection;
    if (!selection || m_state.eventCount() == 0)
        return;
    if (drag == Drag::Pending) {
        const int64_t e = eventAtPixel(event->position().x());
        if (e >= 0) {
            selection->clearRange();
            selection->setEvent(e);
            // By allocation: a click on a band selects that allocation too.
            if (const int64_t alloc = allocationAtPixel(event->position().x(), event->position().y()); alloc >= 0)
                selection->setAllocation(alloc);
        }
    } else if (drag == Drag::Range) {
        const int64_t a = m_state.eventAtKey(m_plot->xAxis->pixelToCoord(std::min(m_pressX, event->position().x())));
        const int64_t b = m_state.eventAtKey(m_plot->xAxis->pixelToCoord(std::max(m_pressX, event->position().x())));
        selection->setRange(a, b);
        selection->setEvent(maxEventInRange(*m_state.timeline, a, b));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

} // namespace headroom
