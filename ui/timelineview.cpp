// SPDX-License-Identifier: MIT
#include "ui/timelineview.h"

#include "ui/timelinecurves.h"

#include "core/downsample.h"
#include "core/minmaxpyramid.h"
#include "core/loader.h"
#include "core/units.h"
#include "ui/byteaxisticker.h"
#include "ui/bookmarksview.h"
#include "ui/categorystyle.h"
#include "ui/categoryarealayer.h"
#include "ui/timelineoverlay.h"
#include "ui/timelinestyle.h"
#include "ui/timelinetooltip.h"
#include "ui/timelineminimap.h"
#include "ui/allocationbandlayer.h"

#include <qcustomplot.h>

#include <QEvent>
#include <QFileInfo>
#include <QToolTip>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QShortcut>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace headroom {

using namespace timelinestyle;

namespace {

constexpr int64_t kMaxTooltipScan = 200000; // events inspected per hover pixel
constexpr double kDragThresholdPx = 4.0;

QString bytes(int64_t n)
{
    return formatBytesQ(n);
}

struct Totals {
    int64_t allocated = 0;
    int64_t reserved = 0;
};

/// The final state's totals, as `headroom-cli summary` computes them.
Totals finalTotals(const DeviceData& dev)
{
    Totals t;
    for (const Segment& s : dev.segments)
        t.reserved += s.totalSize;
    for (const Block& b : dev.blocks)
        if (b.state == BlockState::ActiveAllocated)
            t.allocated += b.size;
    return t;
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
    // Curves above the category areas; the overlay above both.
    m_plot->addLayer(QStringLiteral("curves"), m_plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);

    m_allocated = m_plot->addGraph();
    m_allocated->setName(tr("allocated"));
    m_allocated->setLineStyle(QCPGraph::lsStepLeft);
    m_allocated->setPen(QPen(kAllocatedColor, 1)); // width 1: the fast line path, no stroker
    m_allocated->setAdaptiveSampling(false); // downsampled already, keeping every extreme
    // A min/max-downsampled curve has a vertical edge in almost every pixel column: an
    // aliased fill and 1-pixel pens (no QStroker) keep a replot fast.
    m_allocated->setAntialiasedFill(false);
    m_allocated->setLayer(QStringLiteral("curves"));
    // Step curves are axis-aligned: antialiasing adds nothing but sends the stroke through
    // the grey-scale rasteriser, whose per-row cell lists made it most of a frame's cost.
    m_allocated->setAntialiased(false);

    m_reserved = m_plot->addGraph();
    m_reserved->setName(tr("reserved"));
    m_reserved->setLineStyle(QCPGraph::lsStepLeft);
    m_reserved->setPen(QPen(kReservedColor, 1));
    m_reserved->setAdaptiveSampling(false);
    m_reserved->setLayer(QStringLiteral("curves"));
    m_reserved->setAntialiased(false);

    // Category areas, top of the stack first so the lower ones paint over them.
    const auto& order = categoryStackOrder();
    for (size_t p = order.size(); p-- > 0;) {
        const TensorCategory c = order[p];
        QCPGraph* g = m_plot->addGraph();
        g->setName(categoryDisplayName(c));
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(Qt::NoPen);
        g->setBrush(categoryColor(c));
        g->setAdaptiveSampling(false);
        g->setAntialiasedFill(false);
        g->setAntialiased(false);
        g->removeFromLegend();
        m_categoryGraphs[p] = g;
        m_categoryShown[size_t(c)] = true;
    }

    m_filtered = m_plot->addGraph();
    m_filtered->setName(tr("stack filter"));
    m_filtered->setLineStyle(QCPGraph::lsStepLeft);
    m_filtered->setPen(QPen(kSelectionColor, 2));
    m_filtered->setAdaptiveSampling(false);
    m_filtered->setLayer(QStringLiteral("curves"));
    m_filtered->setAntialiased(false);
    m_filtered->removeFromLegend();

    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
    m_plot->yAxis->setLabel(tr("memory"));
    m_plot->xAxis->setNumberFormat(QStringLiteral("g"));
    m_plot->xAxis->setNumberPrecision(8);

    // Header row: title on the left, legend on the right, out of the data's way.
    auto* header = new QCPLayoutGrid;
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, header);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_title = new QCPTextElement(m_plot, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    header->addElement(0, 0, m_title);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    header->addElement(0, 1, m_plot->legend);
    header->setColumnStretchFactor(0, 0.001);
    header->setColumnStretchFactor(1, 1.0);
    m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_plot->legend->setWrap(6);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setVisible(true);
    m_plot->legend->setSelectableParts(QCPLegend::spNone);

    m_peakTracer = new QCPItemTracer(m_plot);
    m_peakTracer->setStyle(QCPItemTracer::tsCircle);
    m_peakTracer->setSize(9);
    m_peakTracer->setPen(QPen(kPeakColor, 2));
    m_peakTracer->setBrush(Qt::NoBrush);
    m_peakTracer->position->setType(QCPItemPosition::ptPlotCoords);
    m_peakLabel = new QCPItemText(m_plot);
    m_peakLabel->position->setType(QCPItemPosition::ptAbsolute);
    m_peakLabel->position->setParentAnchor(m_peakTracer->position);
    m_peakLabel->position->setCoords(0, -8);
    m_peakLabel->setColor(kPeakColor);
    m_peakLabel->setFont(QFont(font().family(), font().pointSize(), QFont::Bold));
    m_peakLabel->setPadding(QMargins(3, 1, 3, 1));

    m_capacityLine = new QCPItemStraightLine(m_plot);
    m_capacityLine->setPen(QPen(kPeakColor, 1, Qt::DotLine));
    m_capacityLine->setVisible(false);
    m_capacityLabel = new QCPItemText(m_plot);
    m_capacityLabel->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    m_capacityLabel->position->setTypeY(QCPItemPosition::ptPlotCoords);
    m_capacityLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_capacityLabel->setColor(kPeakColor);
    m_capacityLabel->setVisible(false);

    m_emptyText = new QCPItemText(m_plot);
    m_emptyText->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyText->position->setCoords(0.5, 0.4);
    m_emptyText->setPositionAlignment(Qt::AlignCenter);
    m_emptyText->setTextAlignment(Qt::AlignCenter);
    m_emptyText->setFont(QFont(font().family(), font().pointSize() + 2));
    m_emptyText->setPadding(QMargins(10, 8, 10, 8));
    m_emptyText->setPen(QPen(Qt::gray));

    m_overlay = new TimelineOverlay(m_plot, this);
    m_areas = new CategoryAreaLayer(m_plot, this);
    m_bandLayer = new AllocationBandLayer(m_plot, this);
    m_bandLayer->setVisible(false);
    buildControls();
    m_minimap = new TimelineMinimap(this);
    layout->addWidget(m_minimap);
    connect(m_minimap, &TimelineMinimap::rangeRequested, this, [this](double lower, double upper) {
        m_plot->xAxis->setRange(lower, upper);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    });

    m_plot->setInteractions(QCP::iRangeZoom);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            &TimelineView::onRangeChanged);
    connect(m_plot, &QCustomPlot::mousePress, this, &TimelineView::onMousePress);
    connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineView::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &TimelineView::onMouseRelease);
    connect(m_plot, &QCustomPlot::legendClick, this, [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
        auto* pli = qobject_cast<QCPPlottableLegendItem*>(item);
        if (!pli)
            return;
        const auto& order = categoryStackOrder();
        for (size_t p = 0; p < order.size(); ++p)
            if (pli->plottable() == m_categoryGraphs[p])
                setCategoryVisible(order[p], !m_categoryShown[size_t(order[p])]);
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

void TimelineView::buildControls()
{
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(4, 2, 4, 0);
    m_modeCombo = new QComboBox(this);
    m_modeCombo->addItem(tr("By category"), int(Mode::ByCategory));
    m_modeCombo->addItem(tr("By allocation"), int(Mode::ByAllocation));
    m_modeCombo->setToolTip(tr("By category: stacked areas per tensor category.\n"
                               "By allocation: every large allocation as its own band, stacked by birth, "
                               "as PyTorch's Active Memory Timeline draws it (Ctrl+Shift+M toggles)"));
    m_detailSpin = new QSpinBox(this);
    m_detailSpin->setRange(10, 20000);
    m_detailSpin->setSingleStep(100);
    m_detailSpin->setValue(m_bandDetail);
    m_detailSpin->setSuffix(tr(" bands"));
    m_detailSpin->setToolTip(tr("Detail: how many of the largest allocations get their own band; "
                                "the smaller ones are merged into the grey band at the bottom"));
    m_detailSpin->setEnabled(false);
    bar->addWidget(new QLabel(tr("Show:"), this));
    bar->addWidget(m_modeCombo);
    bar->addWidget(m_detailSpin);
    bar->addStretch();
    static_cast<QVBoxLayout*>(layout())->insertLayout(0, bar);
    connect(m_modeCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setMode(Mode(m_modeCombo->itemData(i).toInt())); });
    connect(m_detailSpin, &QSpinBox::editingFinished, this, [this] { setBandDetail(m_detailSpin->value()); });
    auto* toggle = new QShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M), this);
    connect(toggle, &QShortcut::activated, this,
            [this] { setMode(m_mode == Mode::ByCategory ? Mode::ByAllocation : Mode::ByCategory); });
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
    const QSignalBlocker block(m_modeCombo);
    m_modeCombo->setCurrentIndex(m_modeCombo->findData(int(mode)));
    m_detailSpin->setEnabled(mode == Mode::ByAllocation);
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
    const QSignalBlocker block(m_detailSpin);
    m_detailSpin->setValue(maxBands);
    if (m_data)
        m_bands = AllocationBands(m_data->timeline(), size_t(maxBands));
    m_bandLayer->invalidate();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int64_t TimelineView::allocationAtPixel(double px, double py) const
{
    if (m_mode != Mode::ByAllocation || !m_data || !m_timeline)
        return -1;
    const int column = m_bandLayer->columnAt(px);
    if (column < 0)
        return -1;
    const double bytes = m_plot->yAxis->pixelToCoord(py);
    if (bytes < 0)
        return -1;
    const BandSlice* s = m_bandLayer->columns().sliceAt(*m_timeline, size_t(column), int64_t(bytes));
    return s ? int64_t(s->allocation) : -1;
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
    return !m_filterCurve.empty() && !m_filtered->data()->isEmpty();
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
    return m_categoryShown[size_t(c)];
}

void TimelineView::setCategoryVisible(TensorCategory c, bool visible)
{
    if (m_categoryShown[size_t(c)] == visible)
        return;
    m_categoryShown[size_t(c)] = visible;
    updateLegend();
    updateGraphs();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateLegend()
{
    m_categoryPresent.fill(false);
    if (m_data && eventCount() > 0) {
        // A category is in the legend when it ever holds memory: at the peak, at the
        // end, or anywhere (one look at every allocation's class).
        for (size_t i = 0; i < m_data->analysis.classes.size(); ++i)
            m_categoryPresent[size_t(m_data->analysis.classes[i].category)] = true;
    }
    const bool categories = std::any_of(m_categoryPresent.begin(), m_categoryPresent.end(), [](bool b) { return b; });
    const auto& order = categoryStackOrder();
    const QColor text = palette().color(QPalette::WindowText);
    QColor dim = text;
    dim.setAlpha(90);
    for (size_t p = order.size(); p-- > 0;) {
        QCPGraph* g = m_categoryGraphs[p];
        const size_t c = size_t(order[p]);
        g->setVisible(m_categoryPresent[c] && m_categoryShown[c]);
        if (m_categoryPresent[c]) {
            if (!m_plot->legend->hasItemWithPlottable(g))
                g->addToLegend();
            if (auto* item = m_plot->legend->itemWithPlottable(g))
                item->setTextColor(m_categoryShown[c] ? text : dim);
        } else {
            g->removeFromLegend();
        }
    }
    // Without categories the total is the filled area; with them, a line on top. In the
    // category mode the area layer fills it (a few thousand rectangles); a QCPGraph fill of
    // a min/max-downsampled step polygon cost 15-25 ms per frame on a million events.
    m_areaTotalOnly = !categories;
    QColor fill = kAllocatedColor;
    fill.setAlpha(90);
    m_allocated->setBrush(categories || m_mode == Mode::ByCategory ? QBrush(Qt::NoBrush) : QBrush(fill));
    m_allocated->setPen(QPen(categories ? text : kAllocatedColor, 1));
    // Legend order: totals, then the categories top of stack first (as drawn).
    m_allocated->removeFromLegend();
    m_reserved->removeFromLegend();
    m_allocated->addToLegend();
    m_reserved->addToLegend();
    for (size_t p = order.size(); p-- > 0;)
        if (m_plot->legend->hasItemWithPlottable(m_categoryGraphs[p])) {
            m_categoryGraphs[p]->removeFromLegend();
            m_categoryGraphs[p]->addToLegend();
        }
}

void TimelineView::rebuild()
{
    for (const OomMarker& m : m_ooms) {
        m_plot->removeItem(m.line);
        m_plot->removeItem(m.label);
    }
    m_ooms.clear();

    const bool haveDevice = m_device != nullptr;
    const bool haveEvents = eventCount() > 0;
    m_peakTracer->setVisible(haveEvents);
    m_peakLabel->setVisible(haveEvents);
    m_emptyText->setVisible(!haveEvents);
    m_plot->xAxis->setTicks(haveEvents);
    m_plot->xAxis->setTickLabels(haveEvents);
    const int64_t capacity = m_data ? m_data->capacity.bytes : 0;
    m_capacityLine->setVisible(capacity > 0);
    m_capacityLabel->setVisible(capacity > 0);
    if (capacity > 0) {
        m_capacityLine->point1->setCoords(0, double(capacity));
        m_capacityLine->point2->setCoords(1, double(capacity));
        m_capacityLabel->position->setCoords(0.005, double(capacity));
        m_capacityLabel->setText(tr("device capacity %1 (%2)")
                                     .arg(bytes(capacity), QString::fromStdString(m_data->capacity.source)));
    }

    if (!haveDevice) {
        m_title->setText(tr("No file loaded"));
        m_emptyText->setText(tr("Open a PyTorch memory snapshot (File \u25B8 Open, or drop a file here)."));
        m_plot->xAxis->setLabel(QString());
    } else if (!haveEvents) {
        const Totals t = finalTotals(*m_device);
        m_emptyText->setText(tr("Device %1 has no trace entries: only the final state is known.\n"
                                "Allocated: %2    Reserved: %3")
                                 .arg(m_device->device)
                                 .arg(bytes(t.allocated), bytes(t.reserved)));
        m_plot->xAxis->setLabel(tr("no trace entries (final state only)"));
    } else {
        const QString unit = m_curves->timeUnitUs >= 1e6 ? tr("s") : m_curves->timeUnitUs >= 1e3 ? tr("ms") : tr("\u00B5s");
        if (xAxisMode() == XAxisMode::EventIndex) {
            // Whole events only: nice multiples of one, never "-0.8".
            auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
            ticker->setTickStep(1.0);
            ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
            m_plot->xAxis->setTicker(ticker);
        } else {
            m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        }
        QString label = xAxisMode() == XAxisMode::Time ? tr("time since the first event (%1)").arg(unit)
                                                        : tr("trace event index");
        if (m_data)
            label += tr("   \u00B7   click: select an event, drag: select a range, wheel: zoom, right-drag: pan");
        m_plot->xAxis->setLabel(label);
        m_peakKey = keyOf(m_timeline->peakEventIndex);
        m_peakTracer->position->setCoords(m_peakKey, static_cast<double>(m_timeline->peakAllocated));
        m_peakLabel->setText(tr("peak %1").arg(bytes(m_timeline->peakAllocated)));
        rebuildMarkers();
    }
    if (haveDevice) {
        const QString file = QFileInfo(QString::fromStdString(m_trace->snapshot.path)).fileName();
        m_title->setText(tr("Device %1 \u2014 %2").arg(m_device->device).arg(file));
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
    int row = 0;
    for (const OomEvent& oom : m_device->ooms) {
        OomMarker m;
        m.key = keyOf(oom.eventIndex);
        m.line = new QCPItemStraightLine(m_plot);
        m.line->setPen(QPen(kOomColor, 1.5, Qt::DashLine));
        m.line->point1->setCoords(m.key, 0);
        m.line->point2->setCoords(m.key, 1);
        m.label = new QCPItemText(m_plot);
        m.label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        m.label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        m.label->position->setCoords(m.key, 0.06 + 0.08 * (row++ % 5));
        m.label->setText(tr("OOM: requested %1, free %2").arg(bytes(oom.size), bytes(oom.deviceFree)));
        m.label->setColor(kOomColor);
        m.label->setFont(QFont(font().family(), font().pointSize(), QFont::Bold));
        m.label->setPadding(QMargins(4, 2, 4, 2));
        QColor bg = palette().color(QPalette::Base);
        bg.setAlpha(220);
        m.label->setBrush(bg);
        m_ooms.push_back(m);
    }
}

void TimelineView::zoomToFit()
{
    double lo = 0, hi = 1, top = 1;
    if (eventCount() > 0) {
        lo = keyOf(-1);
        hi = keyOf(eventCount() - 1);
        top = static_cast<double>(std::max(m_timeline->peakAllocated, m_timeline->peakReserved));
    } else if (m_device) {
        const Totals t = finalTotals(*m_device);
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
    if (eventCount() <= 0)
        return;
    first = std::clamp<int64_t>(std::min(first, last), -1, eventCount() - 1);
    last = std::clamp<int64_t>(std::max(first, last), -1, eventCount() - 1);
    double lo = keyOf(first), hi = keyOf(last);
    const double pad = std::max((hi - lo) * 0.03, xAxisMode() == XAxisMode::EventIndex ? 1.0 : 1e-3);
    m_plot->xAxis->setRange(lo - pad, hi + pad);
}

int64_t TimelineView::peakEvent() const
{
    return m_timeline && eventCount() > 0 ? m_timeline->peakEventIndex : -1;
}

void TimelineView::zoomBy(double factor)
{
    if (!(factor > 0))
        return;
    m_plot->xAxis->scaleRange(factor, m_plot->xAxis->range().center());
}

void TimelineView::ensureEventVisible(int64_t event)
{
    if (eventCount() <= 0)
        return;
    const double key = keyOf(std::clamp<int64_t>(event, -1, eventCount() - 1));
    const QCPRange r = m_plot->xAxis->range();
    if (key >= r.lower && key <= r.upper)
        return;
    m_plot->xAxis->setRange(key - r.size() / 2, key + r.size() / 2);
}

void TimelineView::onRangeChanged(const QCPRange& range)
{
    if (m_inRangeChange)
        return;
    m_inRangeChange = true;
    if (eventCount() > 0) {
        // Never zoom out past the whole trace (the wheel would shrink it to a line).
        const double lo = keyOf(-1), hi = std::max(keyOf(eventCount() - 1), lo + 1);
        const double margin = (hi - lo) * 0.015;
        if (range.size() > (hi - lo) + 2 * margin)
            m_plot->xAxis->setRange(lo - margin, hi + margin);
    }
    m_inRangeChange = false;
    m_minimap->setVisibleRange(m_plot->xAxis->range().lower, m_plot->xAxis->range().upper);
    updateGraphs();
    updateLabelAlignment();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateGraphs()
{
    QVector<double> keys, allocated, reservedKeys, reserved;
    const int64_t n = eventCount();
    m_areaKeys.clear();
    m_areaStacks.clear();
    m_filtered->data()->clear();
    if (n == 0) {
        if (m_device) { // final state only: flat lines across the empty axis
            const Totals t = finalTotals(*m_device);
            keys = {0.0, 1.0};
            allocated = {double(t.allocated), double(t.allocated)};
            reserved = {double(t.reserved), double(t.reserved)};
        }
        m_allocated->setData(keys, allocated, true);
        m_reserved->setData(keys, reserved, true);
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
    m_allocated->setData(keys, allocated, true);
    m_reserved->setData(reservedKeys, reserved, true);

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
                const size_t c = size_t(order[p]);
                if (m_categoryPresent[c] && m_categoryShown[c])
                    cum += static_cast<double>(values[i][c]);
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
            m_filtered->setData(fk, fv, true);
        }
    }
}

void TimelineView::updateLabelAlignment()
{
    const QCPRange r = m_plot->xAxis->range();
    auto alignFor = [&r](double key) -> Qt::Alignment {
        const double f = (key - r.lower) / r.size();
        if (f > 0.8)
            return Qt::AlignRight;
        if (f < 0.2)
            return Qt::AlignLeft;
        return Qt::AlignHCenter;
    };
    m_peakLabel->setPositionAlignment(Qt::AlignBottom | alignFor(m_peakKey));
    for (const OomMarker& m : m_ooms) {
        const Qt::Alignment h = alignFor(m.key) == Qt::AlignRight ? Qt::AlignRight : Qt::AlignLeft;
        m.label->setPositionAlignment(Qt::AlignTop | h);
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
    for (auto it = m_allocated->data()->constBegin(); it != m_allocated->data()->constEnd(); ++it)
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
    if (eventCount() == 0)
        return -1;
    // Of the events under this pixel, the one with the most memory allocated: that is
    // the top of what the min/max-downsampled curve draws there.
    const int64_t a = eventAtKey(m_plot->xAxis->pixelToCoord(px - 0.5));
    const int64_t b = eventAtKey(m_plot->xAxis->pixelToCoord(px + 0.5));
    int64_t best = a;
    const int64_t end = std::min(b, a + kMaxTooltipScan);
    for (int64_t i = a + 1; i <= end; ++i)
        if (m_timeline->allocated[size_t(i)] > m_timeline->allocated[size_t(best)])
            best = i;
    return best;
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

void TimelineView::onMousePress(QMouseEvent* event)
{
    if (eventCount() == 0 || !m_plot->axisRect()->rect().contains(event->position().toPoint()))
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

void TimelineView::onMouseMove(QMouseEvent* event)
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
        const int column = m_bandLayer->columnAt(pos.x());
        QToolTip::showText(event->globalPosition().toPoint(),
                           describeAllocation(size_t(alloc), m_bandLayer->columns().events[size_t(column)]), m_plot);
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), describeEvent(index), m_plot);
}

void TimelineView::onMouseRelease(QMouseEvent* event)
{
    const Drag drag = m_drag;
    m_drag = Drag::None;
    if (!m_selectionObject || eventCount() == 0)
        return;
    if (drag == Drag::Pending) {
        const int64_t e = eventAtPixel(event->position().x());
        if (e >= 0) {
            m_selectionObject->clearRange();
            m_selectionObject->setEvent(e);
            // By allocation: a click on a band selects that allocation too.
            if (const int64_t alloc = allocationAtPixel(event->position().x(), event->position().y()); alloc >= 0)
                m_selectionObject->setAllocation(alloc);
        }
    } else if (drag == Drag::Range) {
        const int64_t a = eventAtKey(m_plot->xAxis->pixelToCoord(std::min(m_pressX, event->position().x())));
        const int64_t b = eventAtKey(m_plot->xAxis->pixelToCoord(std::max(m_pressX, event->position().x())));
        m_selectionObject->setRange(a, b);
        m_selectionObject->setEvent(maxEventInRange(*m_timeline, a, b));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void TimelineView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

void TimelineView::applyPalette()
{
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    m_plot->setBackground(pal.brush(QPalette::Base));
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setBasePen(QPen(text));
        axis->setTickPen(QPen(text));
        axis->setSubTickPen(QPen(text));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        QColor grid = text;
        grid.setAlpha(28);
        axis->grid()->setPen(QPen(grid, 0)); // solid cosmetic: a dotted pen is stroked on every replot
    }
    m_title->setTextColor(text);
    m_plot->legend->setTextColor(text);
    m_emptyText->setColor(text);
    QColor bg = pal.color(QPalette::Base);
    bg.setAlpha(220);
    m_peakLabel->setBrush(bg);
    m_emptyText->setBrush(bg);
    m_capacityLabel->setBrush(bg);
    for (const OomMarker& m : m_ooms)
        m.label->setBrush(bg);
    updateLegend();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace headroom
