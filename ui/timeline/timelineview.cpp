// SPDX-License-Identifier: MIT
#include "ui/timeline/timelineview.h"

#include "ui/explorer/allocationfilter.h"
#include "ui/timeline/poolcurveitems.h"

#include "ui/timeline/timelinecurves.h"

#include "core/io/loader.h"
#include "core/util/downsample.h"
#include "core/util/minmaxpyramid.h"
#include "core/util/units.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/allocationbandlayer.h"
#include "ui/timeline/categoryarealayer.h"
#include "ui/timeline/timelinecontrols.h"
#include "ui/timeline/timelineinteraction.h"
#include "ui/timeline/timelineminimap.h"
#include "ui/timeline/timelineoverlay.h"
#include "core/whatif/projection/projectedtimeline.h"
#include "ui/timeline/projectedcurveitems.h"
#include "ui/timeline/timelineplotitems.h"
#include "ui/timeline/timelinesampler.h"
#include "ui/timeline/timelinetooltip.h"
#include "ui/views/bookmarksview.h"

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
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setMinimumSize(400, 180);
    m_plot->setMouseTracking(true);
    m_plot->setNoAntialiasingOnDrag(true);
    m_items = std::make_unique<TimelinePlotItems>(m_plot, font());
    // The marker labels' places depend on pixels (the phase names' strip), known after layout.
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        m_items->placeLabels();
        if (m_items->fitLegend())
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        refitHeight();
    });
    m_projected = std::make_unique<ProjectedCurveItems>(m_plot);
    m_pools = std::make_unique<PoolCurveItems>(m_plot);

    m_overlay = new TimelineOverlay(m_plot, m_state);
    m_areas = new CategoryAreaLayer(m_plot, m_state);
    m_bandLayer = new AllocationBandLayer(m_plot, m_state);
    m_bandLayer->setVisible(false);
    m_controls = std::make_unique<TimelineControls>(this, layout);
    m_minimap = new TimelineMinimap(this);
    layout->addWidget(m_minimap);

    m_interaction = new TimelineInteraction(m_plot, m_state, *m_bandLayer, m_minimap, m_selectionObject, this);
    m_overlay->setInteraction(m_interaction);
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
    const bool hadSimulated = hasSimulatedReserved();
    m_state.setDevice(std::move(trace), deviceIndex);
    m_projected->set(nullptr, QString());
    m_pools->set(nullptr);
    m_filterCurve.clear();
    m_controls->deviceChanged(m_state);
    // Prepared by the load worker when it can be (adoptPreparedCurves), else here.
    const auto prepared = m_preparedTrace.lock();
    if (m_state.timeline && prepared && prepared == m_state.trace && size_t(deviceIndex) < m_prepared.size()
        && m_prepared[size_t(deviceIndex)])
        m_state.curves = m_prepared[size_t(deviceIndex)];
    else
        m_state.curves = TimelineCurves::compute(m_state.device, m_state.timeline);
    m_items->setSimulatedReserved(QString());
    rebuild();
    if (hadSimulated)
        emit simulatedReservedChanged(false);
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
        m_pools->set(nullptr);
        m_state.data.reset();
        updateLegend();
        onRangeChanged(m_plot->xAxis->range());
        return;
    }
    if (data->trace != m_state.trace || static_cast<int>(data->deviceIndex) != m_state.deviceIndex)
        setTrace(data->trace, static_cast<int>(data->deviceIndex));
    m_state.data = data;
    m_pools->set(&data->privatePools);
    m_state.bands = m_bandDetail == ExplorerData::kDefaultBands ? data->bands
                                                                : AllocationBands(data->timeline(), size_t(m_bandDetail));
    m_bandLayer->invalidate();
    rebuildFilterCurve();
    updateLegend();
    rebuild();
}

void TimelineView::setBookmarks(const std::vector<Bookmark>& bookmarks)
{
    m_state.bookmarks.clear();
    for (const Bookmark& b : bookmarks)
        m_state.bookmarks.emplace_back(b.event, b.title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::setMode(Mode mode)
{
    if (mode == this->mode())
        return;
    m_state.byAllocation = mode == Mode::ByAllocation;
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
    if (m_state.data)
        m_state.bands = AllocationBands(m_state.data->timeline(), size_t(maxBands));
    m_bandLayer->invalidate();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int64_t TimelineView::allocationAtPixel(double px, double py) const
{
    return m_interaction->allocationAtPixel(px, py);
}

void TimelineView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    m_state.selection = state;
    // A new device or file resets every field; with no filter before or after there is
    // no curve to redo (the areas were just sampled for the new range).
    const bool filtered = !state.stackFilter.empty() || !state.moduleFilter.empty();
    if ((fields & Selection::Filters) && !(!filtered && m_filterCurve.empty())) {
        rebuildFilterCurve();
        updateGraphs();
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::rebuildFilterCurve()
{
    m_filterCurve.clear();
    m_items->setFilterLabel(QString());
    if (!m_state.data)
        return;
    const AllocationFilter filter(*m_state.data, m_state.selection);
    if (!filter.active())
        return;
    m_items->setFilterLabel(filter.description().mid(2)); // without its leading ", "
    m_filterCurve = filteredLiveBytes(m_state.data->timeline(), size_t(m_state.eventCount()), filter.predicate());
    m_filterPyramid = MinMaxPyramid(m_filterCurve);
}

void TimelineView::setSimulatedReserved(std::vector<int64_t> curve, const QString& label)
{
    const bool before = hasSimulatedReserved();
    if (curve.size() != size_t(m_state.eventCount()))
        curve.clear(); // not this device's events
    m_controls->showSimulatedReserved(!curve.empty());
    m_state.simulatedReserved = std::move(curve);
    m_state.simulatedPyramid = MinMaxPyramid(m_state.simulatedReserved);
    m_state.simulatedLabel = hasSimulatedReserved() ? label : QString();
    m_items->setSimulatedReserved(m_state.simulatedLabel);
    updateLegend();
    updateGraphs();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    if (before || hasSimulatedReserved())
        emit simulatedReservedChanged(hasSimulatedReserved());
}

void TimelineView::clearSimulatedReserved()
{
    setSimulatedReserved({}, QString());
}

QCPGraph* TimelineView::simulatedReservedGraph() const
{
    return m_items->simulatedReserved();
}

int64_t TimelineView::filterCurveAt(int64_t event) const
{
    return event >= 0 && size_t(event) < m_filterCurve.size() ? m_filterCurve[size_t(event)] : 0;
}

bool TimelineView::hasFilterCurve() const
{
    return !m_filterCurve.empty() && !m_items->filtered()->data()->isEmpty();
}

void TimelineView::clearData()
{
    const bool hadSimulated = hasSimulatedReserved();
    m_state.clear();
    m_projected->set(nullptr, QString());
    m_pools->set(nullptr);
    m_filterCurve.clear();
    m_controls->deviceChanged(m_state);
    m_items->setSimulatedReserved(QString());
    updateLegend();
    rebuild();
    if (hadSimulated)
        emit simulatedReservedChanged(false);
}

void TimelineView::setXAxisMode(XAxisMode mode)
{
    if ((mode == XAxisMode::Time) == m_state.preferTime)
        return;
    const XAxisMode before = xAxisMode();
    m_state.preferTime = mode == XAxisMode::Time;
    if (xAxisMode() != before) {
        rebuild();
        emit xAxisModeChanged(xAxisMode());
    }
}

TimelineView::XAxisMode TimelineView::xAxisMode() const
{
    return m_state.eventIndexAxis() ? XAxisMode::EventIndex : XAxisMode::Time;
}

bool TimelineView::hasTime() const
{
    return m_state.hasTime();
}

double TimelineView::pixelOfEvent(int64_t event) const
{
    return m_plot->xAxis->coordToPixel(m_state.keyOf(event));
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
    const DeviceAnalysis* analysis = m_state.data && m_state.eventCount() > 0 ? &m_state.data->analysis : nullptr;
    const bool reservedRecorded = !m_state.timeline || m_state.timeline->reservedRecorded;
    m_state.areaTotalOnly = !m_items->updateLegend(analysis, !m_state.byAllocation, palette(), reservedRecorded);
}

void TimelineView::rebuild()
{
    m_items->clearOomMarkers();

    const bool haveDevice = m_state.device != nullptr;
    const bool haveEvents = m_state.eventCount() > 0;
    m_items->setHasEvents(haveEvents);
    const int64_t capacity = m_state.data ? m_state.data->capacity.bytes : 0;
    m_items->setCapacity(capacity, capacity > 0 ? tr("device capacity %1 (%2)")
                                                      .arg(bytes(capacity), QString::fromStdString(m_state.data->capacity.source))
                                                : QString());

    if (!haveDevice) {
        m_items->setTitle(tr("No file loaded"));
        m_items->setEmptyText(tr("Open a PyTorch memory snapshot (File \u25B8 Open, or drop a file here)."));
        m_plot->xAxis->setLabel(QString());
    } else if (!haveEvents) {
        // The tensors' requested bytes, as the peak and the live allocations count them.
        const FinalTotals t = finalTotals(*m_state.device);
        m_items->setEmptyText(tr("Device %1 has no trace entries: only the final state is known.\n"
                                 "Allocated: %2    Reserved: %3")
                                  .arg(m_state.device->device)
                                  .arg(bytes(t.requested), bytes(t.reserved)));
        m_plot->xAxis->setLabel(tr("no trace entries (final state only)"));
    } else {
        const double unitUs = m_state.curves->timeUnitUs;
        const QString unit = unitUs >= 1e6 ? tr("s") : unitUs >= 1e3 ? tr("ms") : tr("\u00B5s");
        m_items->setEventIndexTicks(xAxisMode() == XAxisMode::EventIndex);
        QString label = xAxisMode() == XAxisMode::Time ? tr("time since the first event (%1)").arg(unit)
                                                        : tr("trace event index");
        if (m_state.data)
            label += tr("   \u00B7   click: select an event, drag: select a range, wheel: zoom, right-drag: pan");
        m_plot->xAxis->setLabel(label);
        m_items->setPeak(m_state.keyOf(m_state.timeline->peakEventIndex), m_state.timeline->peakAllocated,
                         tr("peak %1").arg(bytes(m_state.timeline->peakAllocated)));
        rebuildMarkers();
    }
    if (haveDevice) {
        const QString file = QFileInfo(QString::fromStdString(m_state.trace->snapshot.path)).fileName();
        m_items->setTitle(tr("Device %1 \u2014 %2").arg(m_state.device->device).arg(file));
    }
    updateMinimap();
    zoomToFit();
}

void TimelineView::updateMinimap()
{
    const int64_t n = m_state.eventCount();
    if (n == 0) {
        m_minimap->clear();
        return;
    }
    const MemoryTimeline& tl = *m_state.timeline;
    const std::vector<size_t> idx =
        m_state.curves->allocated.downsample(tl.allocated, 0, size_t(n), size_t(std::max(200, m_minimap->width() / 2)));
    std::vector<double> keys{m_state.keyOf(-1)}, values{double(tl.initialAllocated)};
    for (size_t i : idx) {
        keys.push_back(m_state.keyOf(int64_t(i)));
        values.push_back(double(tl.allocated[i]));
    }
    m_minimap->setCurve(std::move(keys), std::move(values), m_state.keyOf(-1), m_state.keyOf(n - 1));
}

void TimelineView::rebuildMarkers()
{
    QColor bg = palette().color(QPalette::Base);
    bg.setAlpha(220);
    for (const OomEvent& oom : m_state.device->ooms)
        m_items->addOomMarker(m_state.keyOf(oom.eventIndex),
                              tr("OOM: requested %1, free %2").arg(bytes(oom.size), bytes(oom.deviceFree)),
                              QFont(font().family(), font().pointSize(), QFont::Bold), bg);
}

double TimelineView::yTop() const
{
    // Room above the highest curve for the phase names' strip and a label beside the peak, in
    // the plot's pixels as laid out: 18% of a tall plot, up to 40% of a short one (in the
    // default window the strip alone is an eighth of it).
    const int height = m_plot->axisRect()->height();
    const double reserve = m_items->phaseStrip().height() + QFontMetrics(font()).height() + 8;
    const double share = height > 0 ? std::clamp(reserve / height, 0.15, 0.4) : 0.15;
    return fitTop() / (1 - share);
}

void TimelineView::refitHeight()
{
    // The share above the curves depends on the plot's height: a resized plot is fitted again.
    const int height = m_plot->axisRect()->height();
    if (height == m_fittedHeight)
        return;
    m_fittedHeight = height;
    m_plot->yAxis->setRange(0, yTop());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

double TimelineView::fitTop() const
{
    double top = 1;
    if (m_state.eventCount() > 0)
        top = static_cast<double>(std::max(m_state.timeline->peakAllocated, m_state.timeline->peakReserved));
    else if (m_state.device) {
        const FinalTotals t = finalTotals(*m_state.device);
        top = static_cast<double>(std::max(t.allocated, t.reserved));
    }
    if (m_state.data && m_state.data->capacity.bytes > 0 && double(m_state.data->capacity.bytes) < top * 2.5)
        top = std::max(top, double(m_state.data->capacity.bytes));
    if (m_state.projected)
        top = std::max(top, m_state.projected->peakHigh);
    return top > 0 ? top : 1024.0 * 1024.0;
}

void TimelineView::zoomToFit()
{
    double lo = 0, hi = 1;
    if (m_state.eventCount() > 0) {
        lo = m_state.keyOf(-1);
        hi = m_state.keyOf(m_state.eventCount() - 1);
    }
    if (!(hi > lo))
        hi = lo + 1;
    // A little air on both sides so markers on the first or last event are not clipped.
    const double pad = (hi - lo) * 0.015;
    if (m_state.eventCount() > 0) {
        lo -= pad;
        hi += pad;
    }
    m_plot->yAxis->setRange(0, yTop());
    const QCPRange before = m_plot->xAxis->range();
    m_plot->xAxis->setRange(lo, hi);
    if (before == m_plot->xAxis->range())
        onRangeChanged(m_plot->xAxis->range()); // no signal when the range stays the same
}

void TimelineView::setProjected(std::shared_ptr<const ProjectedTimeline> projection, const QString& label)
{
    if (projection && projection->hasCurve() && projection->allocated.central.size() != size_t(m_state.eventCount()))
        projection.reset(); // not this device's events
    m_state.projected = projection;
    m_state.projectedLabel = projection ? label : QString();
    m_projected->set(std::move(projection), m_state.projectedLabel);
    m_plot->yAxis->setRange(0, yTop());
    updateGraphs();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::zoomToEvents(int64_t first, int64_t last)
{
    m_interaction->zoomToEvents(first, last);
}

int64_t TimelineView::peakEvent() const
{
    return m_state.timeline && m_state.eventCount() > 0 ? m_state.timeline->peakEventIndex : -1;
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
    const int64_t n = m_state.eventCount();
    m_state.areaKeys.clear();
    m_state.areaStacks.clear();
    m_items->filtered()->data()->clear();
    if (n == 0) {
        if (m_state.device) { // final state only: flat lines across the empty axis
            const FinalTotals t = finalTotals(*m_state.device);
            keys = {0.0, 1.0};
            allocated = {double(t.allocated), double(t.allocated)};
            reserved = {double(t.reserved), double(t.reserved)};
        }
        m_items->allocated()->setData(keys, allocated, true);
        m_items->reserved()->setData(keys, reserved, true);
        m_items->simulatedReserved()->data()->clear();
        return;
    }
    const QCPRange range = m_plot->xAxis->range();
    const TimelineSampler sampler(m_state, range.lower, range.upper,
                                  static_cast<size_t>(std::max(256, m_plot->axisRect()->width())));
    const MemoryTimeline& tl = *m_state.timeline;
    const std::vector<int64_t> events = sampler.events(tl.allocated, m_state.curves->allocated);
    sampler.fill(events, tl.allocated, tl.initialAllocated, keys, allocated);
    sampler.fill(sampler.events(tl.reserved, m_state.curves->reserved), tl.reserved, tl.initialReserved,
                 reservedKeys, reserved);
    m_items->allocated()->setData(keys, allocated, true);
    m_items->reserved()->setData(reservedKeys, reserved, true);
    QVector<double> simulatedKeys, simulated;
    if (!m_state.simulatedReserved.empty())
        sampler.fill(sampler.events(m_state.simulatedReserved, m_state.simulatedPyramid), m_state.simulatedReserved,
                     tl.initialReserved, simulatedKeys, simulated);
    m_items->simulatedReserved()->setData(simulatedKeys, simulated, true);
    m_projected->update(sampler, m_state, tl.initialAllocated);
    m_pools->update(sampler);

    m_bandLayer->invalidate();
    if (!m_state.byAllocation && m_state.areaTotalOnly) {
        // No categories (yet): the area layer fills under the total alone.
        m_state.areaKeys.assign(keys.begin(), keys.end());
        m_state.areaStacks.resize(size_t(keys.size()));
        for (size_t i = 0; i < size_t(keys.size()); ++i)
            m_state.areaStacks[i].fill(allocated[qsizetype(i)]);
    } else if (m_state.data && !m_state.byAllocation) {
        sampler.stackCategories(events, keys, [this](TensorCategory c) { return m_items->categoryDrawn(c); },
                                m_state.areaKeys, m_state.areaStacks);
        if (!m_filterCurve.empty()) {
            const std::vector<int64_t> fe = sampler.events(m_filterCurve, m_filterPyramid);
            QVector<double> fk, fv;
            sampler.fill(fe, m_filterCurve, 0, fk, fv);
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
    for (const auto& s : m_state.areaStacks)
        peak = std::max(peak, s.back());
    return peak;
}

int64_t TimelineView::eventAtPixel(double px) const
{
    return m_interaction->eventAtPixel(px);
}

QString TimelineView::describeEvent(int64_t index) const
{
    if (!m_state.trace || index < 0 || index >= m_state.eventCount())
        return QString();
    return TimelineTooltip(m_state).event(index);
}

QString TimelineView::describeAllocation(size_t allocation, int64_t atEvent) const
{
    if (!m_state.trace)
        return QString();
    return TimelineTooltip(m_state).allocation(allocation, atEvent);
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
