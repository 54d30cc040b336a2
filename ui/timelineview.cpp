// SPDX-License-Identifier: MIT
#include "ui/timelineview.h"

#include "core/downsample.h"
#include "core/loader.h"
#include "core/units.h"
#include "ui/byteaxisticker.h"

#include <qcustomplot.h>

#include <QEvent>
#include <QFileInfo>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

constexpr size_t kTooltipFrames = 5;
constexpr int64_t kMaxTooltipScan = 200000; // events inspected per hover pixel
const QColor kAllocatedColor(31, 119, 180);
const QColor kReservedColor(230, 126, 34);
const QColor kPeakColor(200, 30, 30);
const QColor kOomColor(190, 0, 0);

QString bytes(int64_t n)
{
    return QString::fromStdString(formatBytes(n));
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

TimelineView::TimelineView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setMinimumSize(400, 250);
    m_plot->setMouseTracking(true);

    m_allocated = m_plot->addGraph();
    m_allocated->setName(tr("allocated"));
    m_allocated->setLineStyle(QCPGraph::lsStepLeft);
    QColor fill = kAllocatedColor;
    fill.setAlpha(90);
    m_allocated->setPen(QPen(kAllocatedColor, 1)); // width 1: the fast line path, no stroker
    m_allocated->setBrush(fill);
    m_allocated->setAdaptiveSampling(false); // downsampled already, keeping every extreme
    // A min/max-downsampled curve has a vertical edge in almost every pixel column: an
    // aliased fill and 1-pixel pens (no QStroker) keep a replot near 0.1 s instead of 0.4 s.
    m_allocated->setAntialiasedFill(false);

    m_reserved = m_plot->addGraph();
    m_reserved->setName(tr("reserved"));
    m_reserved->setLineStyle(QCPGraph::lsStepLeft);
    m_reserved->setPen(QPen(kReservedColor, 1));
    m_reserved->setAdaptiveSampling(false);

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
    header->setColumnStretchFactor(0, 1.0);
    header->setColumnStretchFactor(1, 0.001);
    m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setVisible(true);

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

    m_emptyText = new QCPItemText(m_plot);
    m_emptyText->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyText->position->setCoords(0.5, 0.4);
    m_emptyText->setPositionAlignment(Qt::AlignCenter);
    m_emptyText->setTextAlignment(Qt::AlignCenter);
    m_emptyText->setFont(QFont(font().family(), font().pointSize() + 2));
    m_emptyText->setPadding(QMargins(10, 8, 10, 8));
    m_emptyText->setPen(QPen(Qt::gray));

    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            &TimelineView::onRangeChanged);
    connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineView::onMouseMove);

    applyPalette();
    clearData();
}

TimelineView::~TimelineView() = default;

void TimelineView::setData(std::shared_ptr<const LoadedTrace> trace, int deviceIndex)
{
    m_trace = std::move(trace);
    m_device = nullptr;
    m_timeline = nullptr;
    if (m_trace && deviceIndex >= 0 && deviceIndex < static_cast<int>(m_trace->snapshot.devices.size())) {
        m_device = &m_trace->snapshot.devices[static_cast<size_t>(deviceIndex)];
        m_timeline = &m_trace->timelines[static_cast<size_t>(deviceIndex)];
    }
    m_timeKeys.clear();
    if (m_device && m_device->trace.anyTime) {
        const std::vector<int64_t>& t = m_device->trace.timeUs;
        const auto first = std::find_if(t.begin(), t.end(), [](int64_t v) { return v != TraceEvents::kNoTime; });
        m_firstTimeUs = *first;
        const auto lastTime = std::find_if(t.rbegin(), t.rend(), [](int64_t v) { return v != TraceEvents::kNoTime; });
        const int64_t span = *lastTime - m_firstTimeUs;
        m_timeUnitUs = span >= 2000000 ? 1e6 : span >= 2000 ? 1e3 : 1.0;
        m_timeKeys.resize(t.size());
        double last = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            // Entries without a time, or out of order, keep the previous key so the
            // keys stay sorted (binary search, QCPGraph's alreadySorted).
            if (t[i] != TraceEvents::kNoTime)
                last = std::max(last, static_cast<double>(t[i] - m_firstTimeUs) / m_timeUnitUs);
            m_timeKeys[i] = last;
        }
    }
    rebuild();
}

void TimelineView::clearData()
{
    m_trace.reset();
    m_device = nullptr;
    m_timeline = nullptr;
    m_timeKeys.clear();
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
    return !m_timeKeys.empty();
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
    return m_timeKeys[static_cast<size_t>(std::min(event, eventCount() - 1))];
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
        i = std::upper_bound(m_timeKeys.begin(), m_timeKeys.end(), key) - m_timeKeys.begin() - 1;
    }
    return std::clamp<int64_t>(i, 0, n - 1);
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
        const QString unit = m_timeUnitUs >= 1e6 ? tr("s") : m_timeUnitUs >= 1e3 ? tr("ms") : tr("\u00B5s");
        if (xAxisMode() == XAxisMode::EventIndex) {
            // Whole events only: nice multiples of one, never "-0.8".
            auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
            ticker->setTickStep(1.0);
            ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
            m_plot->xAxis->setTicker(ticker);
        } else {
            m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        }
        m_plot->xAxis->setLabel(xAxisMode() == XAxisMode::Time ? tr("time since the first event (%1)").arg(unit)
                                                               : tr("trace event index"));
        m_peakKey = keyOf(m_timeline->peakEventIndex);
        m_peakTracer->position->setCoords(m_peakKey, static_cast<double>(m_timeline->peakAllocated));
        m_peakLabel->setText(tr("peak %1").arg(bytes(m_timeline->peakAllocated)));
        rebuildMarkers();
    }
    if (haveDevice) {
        const QString file = QFileInfo(QString::fromStdString(m_trace->snapshot.path)).fileName();
        m_title->setText(tr("Device %1 \u2014 %2").arg(m_device->device).arg(file));
    }
    zoomToFit();
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
        m.label->position->setCoords(m.key, 0.03 + 0.08 * (row++ % 5));
        m.label->setText(tr("OOM: requested %1, free %2").arg(bytes(oom.size), bytes(oom.deviceFree)));
        m.label->setColor(kOomColor);
        m.label->setFont(QFont(font().family(), font().pointSize(), QFont::Bold));
        m.label->setPadding(QMargins(4, 2, 4, 2));
        m.label->setBrush(QColor(255, 255, 255, 210));
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
    m_plot->yAxis->setRange(0, top * 1.15); // headroom above the peak for its label
    const QCPRange before = m_plot->xAxis->range();
    m_plot->xAxis->setRange(lo, hi);
    if (before == m_plot->xAxis->range())
        onRangeChanged(m_plot->xAxis->range()); // no signal when the range stays the same
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
    updateGraphs();
    updateLabelAlignment();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateGraphs()
{
    QVector<double> keys, allocated, reservedKeys, reserved;
    const int64_t n = eventCount();
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

    auto fill = [&](const std::vector<int64_t>& values, int64_t initial, QVector<double>& k, QVector<double>& v) {
        std::vector<size_t> idx = downsampleMinMax(values, first, last, buckets);
        k.reserve(static_cast<qsizetype>(idx.size()) + 2);
        v.reserve(k.capacity());
        if (first == 0) {
            k.push_back(keyOf(-1));
            v.push_back(static_cast<double>(initial));
        }
        if (idx.empty() || idx.front() != first) {
            k.push_back(keyOf(static_cast<int64_t>(first)));
            v.push_back(static_cast<double>(values[first]));
        }
        for (size_t i : idx) {
            k.push_back(keyOf(static_cast<int64_t>(i)));
            v.push_back(static_cast<double>(values[i]));
        }
    };
    fill(m_timeline->allocated, m_timeline->initialAllocated, keys, allocated);
    fill(m_timeline->reserved, m_timeline->initialReserved, reservedKeys, reserved);
    m_allocated->setData(keys, allocated, true);
    m_reserved->setData(reservedKeys, reserved, true);
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

double TimelineView::plottedPeakBytes() const
{
    double peak = 0;
    for (auto it = m_allocated->data()->constBegin(); it != m_allocated->data()->constEnd(); ++it)
        peak = std::max(peak, it->value);
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

QString TimelineView::eventTime(int64_t index) const
{
    const int64_t t = m_device->trace.timeUs[size_t(index)];
    if (t == TraceEvents::kNoTime)
        return QString();
    return QString::fromStdString(formatDurationUs(t - m_firstTimeUs));
}

QString TimelineView::describeEvent(int64_t index) const
{
    if (index < 0 || index >= eventCount())
        return QString();
    const TraceEvents& ev = m_device->trace;
    const size_t i = size_t(index);
    QString html = QStringLiteral("<p style='white-space:pre'><b>") + tr("Event %1").arg(index) + QStringLiteral("</b>");
    if (hasTime())
        html += QStringLiteral(" \u00B7 ") + tr("at %1").arg(eventTime(index));
    html += QStringLiteral("<br>") + QString::fromLatin1(actionName(ev.action[i]));
    if (ev.size[i] != 0)
        html += QLatin1Char(' ') + bytes(ev.size[i]);
    if (ev.addr[i] != 0)
        html += QStringLiteral(" at 0x") + QString::number(ev.addr[i], 16);
    html += QStringLiteral("<br>") + tr("allocated: %1 \u00B7 reserved: %2")
                                         .arg(bytes(m_timeline->allocated[i]), bytes(m_timeline->reserved[i]));
    const FrameTable& frames = m_trace->snapshot.frames;
    const std::vector<uint32_t> top = frames.topFrames(ev.stack[i], kTooltipFrames);
    if (top.empty()) {
        html += QStringLiteral("<br><i>") + tr("no Python frames recorded") + QStringLiteral("</i>");
    } else {
        html += QStringLiteral("<br><i>") + tr("top frames:") + QStringLiteral("</i>");
        for (uint32_t f : top) {
            QString text = QString::fromStdString(frames.formatFrame(f));
            if (text.size() > 110)
                text = QStringLiteral("\u2026") + text.right(109);
            html += QStringLiteral("<br>&nbsp;&nbsp;") + text.toHtmlEscaped();
        }
    }
    return html + QStringLiteral("</p>");
}

void TimelineView::onMouseMove(QMouseEvent* event)
{
    const QPointF pos = event->position();
    if (event->buttons() != Qt::NoButton || !m_plot->axisRect()->rect().contains(pos.toPoint())) {
        QToolTip::hideText();
        return;
    }
    const int64_t index = eventAtPixel(pos.x());
    if (index < 0) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), describeEvent(index), m_plot);
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
        grid.setAlpha(40);
        axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
    }
    m_title->setTextColor(text);
    m_plot->legend->setTextColor(text);
    m_emptyText->setColor(text);
    QColor bg = pal.color(QPalette::Base);
    bg.setAlpha(220);
    m_peakLabel->setBrush(bg);
    m_emptyText->setBrush(bg);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace headroom
