// SPDX-License-Identifier: MIT
#include "ui/timelineview.h"

#include "ui/timelinecurves.h"

#include "core/downsample.h"
#include "core/minmaxpyramid.h"
#include "core/loader.h"
#include "core/units.h"
#include "ui/bookmarksview.h"
#include "ui/categorystyle.h"
#include "ui/categoryarealayer.h"
#include "ui/timelinecontrols.h"
#include "ui/timelineinteraction.h"
#include "ui/timelineoverlay.h"
#include "ui/timelineplotitems.h"
#include "ui/timelinetooltip.h"
#include "ui/timelineminimap.h"
#include "ui/allocationbandlayer.h"

#include <qcustomplot.h>

#include <QEvent>
#include <QFileInfo>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>

namespace headroom {

namespace {

QString bytes(int64_t n)
{
    return formatBytesQ(n);
}

} // namespace

TimelineView::TimelineView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selectionObject(selection)
    , m_plot(new QCustomPlot(this))
    , m_curves(TimelineCurves::compute(nullptr, nullptr))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setMinimumSize(400, 180);
    m_plot->setMouseTracking(true);
    m_plot->setNoAntialiasingOnDrag(true);
    m_items = std::make_unique<TimelinePlotItems>(m_plot, font());

    m_overlay = new TimelineOverlay(m_plot, this);
    m_areas = new CategoryAreaLayer(m_plot, this);
    m_bandLayer = new AllocationBandLayer(m_plot, this);
    m_bandLayer->setVisible(false);
    m_controls = std::make_unique<TimelineControls>(this, layout);
    m_minimap = new TimelineMinimap(this);
    layout->addWidget(m_minimap);

    m_interaction = new TimelineInteraction(m_plot, this);
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            &TimelineView::onRangeChanged);
    connect(m_plot, &QCustomPlot::legendClick, this, [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
        if (const std::optional<TensorCategory> c = m_items->legendCategory(item))
            setCategoryVisible(*c, !m_items->categoryShown(*c));
    });

    applyPalette();
    clearData();
}

TimelineView::~TimelineView() = default;

void TimelineView::setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex)
{
    m_trace = std::move(trace);
    m_data.reset();
    m_filterCurve.clear();
    m_selection = SelectionState{};
    m_device = nullptr;
    m_timeline = nullptr;
    m_deviceIndex = -1;
    if (m_trace && deviceIndex >= 0 && deviceIndex < static_cast<int>(m_trace->snapshot.devices.size())) {
        m_device = &m_trace->snapshot.devices[static_cast<size_t>(deviceIndex)];
        m_timeline = &m_trace->timelines[static_cast<size_t>(deviceIndex)];
        m_deviceIndex = deviceIndex;
    }
    // Prepared by the load worker when it can be (adoptPreparedCurves), else here.
    const auto prepared = m_preparedTrace.lock();
    if (m_timeline && prepared && prepared == m_trace && size_t(deviceIndex) < m_prepared.size() && m_prepared[size_t(deviceIndex)])
        m_curves = m_prepared[size_t(deviceIndex)];
    else
        m_curves = TimelineCurves::compute(m_device, m_timeline);
    rebuild();
}

void TimelineView::adoptPreparedCurves(const std::shared_ptr<const LoadedTrace>& trace,
                                       std::vector<std::shared_ptr<const TimelineCurves>> curves)
{
    m_preparedTrace = trace;
    m_prepared = std::move(curves);
}

void TimelineView::setData(const ExplorerDataPtr& data)
{
    if (!data) {
        m_data.reset();
        updateLegend();
        onRangeChanged(m_plot->xAxis->range());
        return;
    }
    if (data->trace != m_trace || static_cast<int>(data->deviceIndex) != m_deviceIndex)
        setTrace(data->trace, static_cast<int>(data->deviceIndex));
    m_data = data;
    m_bands = m_bandDetail == ExplorerData::kDefaultBands ? data->bands : AllocationBands(data->timeline(), size_t(m_bandDetail));
    m_bandLayer->invalidate();
    rebuildFilterCurve();
    updateLegend();
    rebuild();
}

void TimelineView::setBookmarks(const std::vector<Bookmark>& bookmarks)
{
    m_bookmarks.clear();
    for (const Bookmark& b : bookmarks)
        m_bookmarks.emplace_back(b.event, b.title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::setMode(Mode mode)
{
    if (mode == m_mode)
        return;
    m_mode = mode;
    m_controls->showMode(mode);
    m_areas->setVisible(mode == Mode::ByCategory);
    m_bandLayer->setVisible(mode == Mode::ByAllocation);
    m_bandLayer->invalidate();
    updateLegend();
    updateGraphs();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    emit modeChanged(mode);
}

void TimelineView::setBandDetail(int maxBands)
{
    maxBands = std::clamp(maxBands, 1, 1000000);
    if (maxBands == m_bandDetail)
        return;
    m_bandDetail = maxBands;
    m_controls->showBandDetail(maxBands);
    if (m_data)
        m_bands = AllocationBands(m_data->timeline(), size_t(maxBands));
    m_bandLayer->invalidate();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int64_t TimelineView::allocationAtPixel(double px, double py) const
{
    return m_interaction->allocationAtPixel(px, py);
}

int64_t TimelineView::firstEventAtOrAfterKey(double key) const
{
    const int64_t n = eventCount();
    if (xAxisMode() == XAxisMode::EventIndex)
        return std::clamp<int64_t>(int64_t(std::ceil(key)), 0, n);
    return std::lower_bound(m_curves->timeKeys.begin(), m_curves->timeKeys.end(), key) - m_curves->timeKeys.begin();
}

void TimelineView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    m_selection = state;
    // A new device or file resets every field; with no filter before or after there is
    // no curve to redo (the areas were just sampled for the new range).
    if ((fields & Selection::StackFilter) && !(state.stackFilter.empty() && m_filterCurve.empty())) {
        rebuildFilterCurve();
        updateGraphs();
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::rebuildFilterCurve()
{
    m_filterCurve.clear();
    if (!m_data || m_selection.stackFilter.empty())
        return;
    const auto& path = m_selection.stackFilter;
    const FrameTable& frames = m_data->frames();
    const MemoryTimeline& tl = m_data->timeline();
    m_filterCurve = filteredLiveBytes(tl, size_t(eventCount()),
                                      [&](size_t i) { return stackStartsWith(frames, tl.allocations[i].stack, path); });
    m_filterPyramid = MinMaxPyramid(m_filterCurve);
}

bool TimelineView::hasFilterCurve() const
{
    return !m_filterCurve.empty() && !m_items->filtered()->data()->isEmpty();
}

void TimelineView::clearData()
{
    m_trace.reset();
    m_data.reset();
    m_filterCurve.clear();
    m_device = nullptr;
    m_timeline = nullptr;
    m_deviceIndex = -1;
    m_curves = TimelineCurves::compute(nullptr, nullptr);
    updateLegend();
    rebuild();
}

void TimelineView::setXAxisMode(XAxisMode mode)
{
    if (mode == m_preferredMode)
        return;
    const XAxisMode before = xAxisMode();
    m_preferredMode = mode;
    if (xAxisMode() != before) {
        rebuild();
        emit xAxisModeChanged(xAxisMode());
    }
}

TimelineView::XAxisMode TimelineView::xAxisMode() const
{
    return hasTime() ? m_preferredMode : XAxisMode::EventIndex;
}

bool TimelineView::hasTime() const
{
    return !m_curves->timeKeys.empty();
}

int64_t TimelineView::eventCount() const
{
    return m_device ? static_cast<int64_t>(m_device->trace.count()) : 0;
}

double TimelineView::keyOf(int64_t event) const
{
    if (xAxisMode() == XAxisMode::EventIndex)
        return static_cast<double>(event); // the state before the first event sits at -1
    if (event < 0)
        return 0.0;
    return m_curves->timeKeys[static_cast<size_t>(std::min(event, eventCount() - 1))];
}

double TimelineView::pixelOfEvent(int64_t event) const
{
    return m_plot->xAxis->coordToPixel(keyOf(event));
}

int64_t TimelineView::eventAtKey(double key) const
{
    const int64_t n = eventCount();
    if (n == 0)
        return -1;
    int64_t i;
    if (xAxisMode() == XAxisMode::EventIndex) {
        i = static_cast<int64_t>(std::floor(key));
    } else {
        i = std::upper_bound(m_curves->timeKeys.begin(), m_curves->timeKeys.end(), key) - m_curves->timeKeys.begin() - 1;
    }
    return std::clamp<int64_t>(i, 0, n - 1);
}

bool TimelineView::categoryVisible(TensorCategory c) const
{
    return m_items->categoryShown(c);
}

void TimelineView::setCategoryVisible(TensorCategory c, bool visible)
{
    if (m_items->categoryShown(c) == visible)
        return;
    m_items->setCategoryShown(c, visible);
    updateLegend();
    updateGraphs();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateLegend()
{
    const DeviceAnalysis* analysis = m_data && eventCount() > 0 ? &m_data->analysis : nullptr;
    m_areaTotalOnly = !m_items->updateLegend(analysis, m_mode == Mode::ByCategory, palette());
}

void TimelineView::rebuild()
{
    m_items->clearOomMarkers();

    const bool haveDevice = m_device != nullptr;
    const bool haveEvents = eventCount() > 0;
    m_items->setHasEvents(haveEvents);
    const int64_t capacity = m_data ? m_data->capacity.bytes : 0;
    m_items->setCapacity(capacity, capacity > 0 ? tr("device capacity %1 (%2)")
                                                      .arg(bytes(capacity), QString::fromStdString(m_data->capacity.source))
                                                : QString());

    if (!haveDevice) {
        m_items->setTitle(tr("No file loaded"));
        m_items->setEmptyText(tr("Open a PyTorch memory snapshot (File \u25B8 Open, or drop a file here)."));
        m_plot->xAxis->setLabel(QString());
    } else if (!haveEvents) {
        const FinalTotals t = finalTotals(*m_device);
        m_items->setEmptyText(tr("Device %1 has no trace entries: only the final state is known.\n"
                                 "Allocated: %2    Reserved: %3")
                                  .arg(m_device->device)
                                  .arg(bytes(t.allocated), bytes(t.reserved)));
        m_plot->xAxis->setLabel(tr("no trace entries (final state only)"));
    } else {
        const QString unit = m_curves->timeUnitUs >= 1e6 ? tr("s") : m_curves->timeUnitUs >= 1e3 ? tr("ms") : tr("\u00B5s");
        m_items->setEventIndexTicks(xAxisMode() == XAxisMode::EventIndex);
        QString label = xAxisMode() == XAxisMode::Time ? tr("time since the first event (%1)").arg(unit)
                                                        : tr("trace event index");
        if (m_data)
            label += tr("   \u00B7   click: select an event, drag: select a range, wheel: zoom, right-drag: pan");
        m_plot->xAxis->setLabel(label);
        m_items->setPeak(keyOf(m_timeline->peakEventIndex), m_timeline->peakAllocated,
                         tr("peak %1").arg(bytes(m_timeline->peakAllocated)));
        rebuildMarkers();
    }
    if (haveDevice) {
        const QString file = QFileInfo(QString::fromStdString(m_trace->snapshot.path)).fileName();
        m_items->setTitle(tr("Device %1 \u2014 %2").arg(m_device->device).arg(file));
    }
    updateMinimap();
    zoomToFit();
}

void TimelineView::updateMinimap()
{
    const int64_t n = eventCount();
    if (n == 0) {
        m_minimap->clear();
        return;
    }
    const std::vector<size_t> idx =
        m_curves->allocated.downsample(m_timeline->allocated, 0, size_t(n), size_t(std::max(200, m_minimap->width() / 2)));
    std::vector<double> keys{keyOf(-1)}, values{double(m_timeline->initialAllocated)};
    for (size_t i : idx) {
        keys.push_back(keyOf(int64_t(i)));
        values.push_back(double(m_timeline->allocated[i]));
    }
    m_minimap->setCurve(std::move(keys), std::move(values), keyOf(-1), keyOf(n - 1));
}

void TimelineView::rebuildMarkers()
{
    QColor bg = palette().color(QPalette::Base);
    bg.setAlpha(220);
    for (const OomEvent& oom : m_device->ooms)
        m_items->addOomMarker(keyOf(oom.eventIndex),
                              tr("OOM: requested %1, free %2").arg(bytes(oom.size), bytes(oom.deviceFree)),
                              QFont(font().family(), font().pointSize(), QFont::Bold), bg);
}

void TimelineView::zoomToFit()
{
    double lo = 0, hi = 1, top = 1;
    if (eventCount() > 0) {
        lo = keyOf(-1);
        hi = keyOf(eventCount() - 1);
        top = static_cast<double>(std::max(m_timeline->peakAllocated, m_timeline->peakReserved));
    } else if (m_device) {
        const FinalTotals t = finalTotals(*m_device);
        top = static_cast<double>(std::max(t.allocated, t.reserved));
    }
    if (m_data && m_data->capacity.bytes > 0 && double(m_data->capacity.bytes) < top * 2.5)
        top = std::max(top, double(m_data->capacity.bytes));
    if (!(hi > lo))
        hi = lo + 1;
    // A little air on both sides so markers on the first or last event are not clipped.
    const double pad = (hi - lo) * 0.015;
    if (eventCount() > 0) {
        lo -= pad;
        hi += pad;
    }
    if (!(top > 0))
        top = 1024.0 * 1024.0;
    m_plot->yAxis->setRange(0, top * 1.18); // headroom above the peak for its label and the phase bands
    const QCPRange before = m_plot->xAxis->range();
    m_plot->xAxis->setRange(lo, hi);
    if (before == m_plot->xAxis->range())
        onRangeChanged(m_plot->xAxis->range()); // no signal when the range stays the same
}

void TimelineView::zoomToEvents(int64_t first, int64_t last)
{
    m_interaction->zoomToEvents(first, last);
}

int64_t TimelineView::peakEvent() const
{
    return m_timeline && eventCount() > 0 ? m_timeline->peakEventIndex : -1;
}

void TimelineView::zoomBy(double factor)
{
    m_interaction->zoomBy(factor);
}

void TimelineView::ensureEventVisible(int64_t event)
{
    m_interaction->ensureEventVisible(event);
}

void TimelineView::onRangeChanged(const QCPRange& range)
{
    if (m_inRangeChange)
        return;
    m_inRangeChange = true;
    m_interaction->limitZoomOut(range);
    m_inRangeChange = false;
    m_minimap->setVisibleRange(m_plot->xAxis->range().lower, m_plot->xAxis->range().upper);
    updateGraphs();
    m_items->updateLabelAlignment(m_plot->xAxis->range());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateGraphs()
{
    QVector<double> keys, allocated, reservedKeys, reserved;
    const int64_t n = eventCount();
    m_areaKeys.clear();
    m_areaStacks.clear();
    m_items->filtered()->data()->clear();
    if (n == 0) {
        if (m_device) { // final state only: flat lines across the empty axis
            const FinalTotals t = finalTotals(*m_device);
            keys = {0.0, 1.0};
            allocated = {double(t.allocated), double(t.allocated)};
            reserved = {double(t.reserved), double(t.reserved)};
        }
        m_items->allocated()->setData(keys, allocated, true);
        m_items->reserved()->setData(keys, reserved, true);
        return;
    }
    const QCPRange range = m_plot->xAxis->range();
    // One event of margin on both sides so the steps reach the axis edges.
    const size_t first = static_cast<size_t>(std::max<int64_t>(0, eventAtKey(range.lower) - 1));
    const size_t last = static_cast<size_t>(std::min<int64_t>(n, eventAtKey(range.upper) + 2));
    const size_t buckets = static_cast<size_t>(std::max(256, m_plot->axisRect()->width()));

    // The event indices drawn: every bucket's min and max of the total, -1 for the start.
    auto sample = [&](const std::vector<int64_t>& values, const MinMaxPyramid& pyramid) {
        std::vector<size_t> idx = pyramid.downsample(values, first, last, buckets);
        std::vector<int64_t> events;
        events.reserve(idx.size() + 2);
        if (first == 0)
            events.push_back(-1);
        if (idx.empty() || idx.front() != first)
            events.push_back(static_cast<int64_t>(first));
        for (size_t i : idx)
            events.push_back(static_cast<int64_t>(i));
        return events;
    };
    auto fill = [&](const std::vector<int64_t>& events, const std::vector<int64_t>& values, int64_t initial,
                    QVector<double>& k, QVector<double>& v) {
        k.reserve(static_cast<qsizetype>(events.size()));
        v.reserve(k.capacity());
        for (int64_t e : events) {
            k.push_back(keyOf(e));
            v.push_back(static_cast<double>(e < 0 ? initial : values[size_t(e)]));
        }
    };
    const std::vector<int64_t> events = sample(m_timeline->allocated, m_curves->allocated);
    fill(events, m_timeline->allocated, m_timeline->initialAllocated, keys, allocated);
    fill(sample(m_timeline->reserved, m_curves->reserved), m_timeline->reserved, m_timeline->initialReserved, reservedKeys, reserved);
    m_items->allocated()->setData(keys, allocated, true);
    m_items->reserved()->setData(reservedKeys, reserved, true);

    m_bandLayer->invalidate();
    if (m_mode == Mode::ByCategory && m_areaTotalOnly) {
        // No categories (yet): the area layer fills under the total alone.
        m_areaKeys.assign(keys.begin(), keys.end());
        m_areaStacks.resize(size_t(keys.size()));
        for (size_t i = 0; i < size_t(keys.size()); ++i)
            m_areaStacks[i].fill(allocated[qsizetype(i)]);
    } else if (m_data && m_mode == Mode::ByCategory) {
        // Category areas at the total's sample points: the stack's top follows the total's
        // extremes, so no peak disappears between samples.
        const std::vector<GroupedSeries::Values> values = m_data->categories.valuesAt(events);
        const auto& order = categoryStackOrder();
        m_areaKeys.resize(size_t(keys.size()));
        m_areaStacks.resize(size_t(keys.size()));
        for (size_t i = 0; i < size_t(keys.size()); ++i) {
            m_areaKeys[i] = keys[qsizetype(i)];
            double cum = 0;
            for (size_t p = 0; p < order.size(); ++p) {
                const TensorCategory c = order[p];
                if (m_items->categoryDrawn(c))
                    cum += static_cast<double>(values[i][size_t(c)]);
                m_areaStacks[i][p] = cum;
            }
        }
        if (!m_filterCurve.empty()) {
            const std::vector<int64_t> fe = sample(m_filterCurve, m_filterPyramid);
            QVector<double> fk, fv;
            int64_t initial = 0;
            fill(fe, m_filterCurve, initial, fk, fv);
            if (!fv.isEmpty() && fe.front() < 0) // the state before event 0: the first value's
                fv[0] = fv.size() > 1 ? fv[1] : 0;
            m_items->filtered()->setData(fk, fv, true);
        }
    }
}

void TimelineView::replotNow()
{
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

void TimelineView::render(QCPPainter* painter, const QSize& size)
{
    // toPainter draws vectors (SVG, PDF) at the requested size.
    m_plot->toPainter(painter, size.width(), size.height());
}

double TimelineView::plottedPeakBytes() const
{
    double peak = 0;
    for (auto it = m_items->allocated()->data()->constBegin(); it != m_items->allocated()->data()->constEnd(); ++it)
        peak = std::max(peak, it->value);
    return peak;
}

double TimelineView::plottedStackPeak() const
{
    double peak = 0;
    for (const auto& s : m_areaStacks)
        peak = std::max(peak, s.back());
    return peak;
}

int64_t TimelineView::eventAtPixel(double px) const
{
    return m_interaction->eventAtPixel(px);
}

QString TimelineView::describeEvent(int64_t index) const
{
    if (!m_trace || index < 0 || index >= eventCount())
        return QString();
    return TimelineTooltip(*m_trace, size_t(m_deviceIndex), m_data.get(), m_curves->firstTimeUs).event(index);
}

QString TimelineView::describeAllocation(size_t allocation, int64_t atEvent) const
{
    if (!m_trace)
        return QString();
    return TimelineTooltip(*m_trace, size_t(m_deviceIndex), m_data.get(), m_curves->firstTimeUs).allocation(allocation, atEvent);
}

void TimelineView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

void TimelineView::applyPalette()
{
    m_items->applyPalette(palette());
    updateLegend();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace headroom
