// SPDX-License-Identifier: MIT
#include "ui/timeline/timelineplotitems.h"

#include "core/analysis/memoryanalysis.h"
#include "ui/plot/byteaxisticker.h"
#include "ui/plot/categorystyle.h"
#include "ui/plot/plotstyle.h"
#include "ui/timeline/timelinestyle.h"

#include <qcustomplot.h>

#include <algorithm>

namespace headroom {

using namespace timelinestyle;

TimelinePlotItems::TimelinePlotItems(QCustomPlot* plot, const QFont& font)
    : m_plot(plot)
{
    // Curves above the category areas; the overlay above both.
    m_plot->addLayer(QStringLiteral("curves"), m_plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);

    // The curves: steps on the curves layer, downsampled already (keeping every extreme),
    // so no adaptive sampling. Step curves are axis-aligned: antialiasing adds nothing but
    // sends the stroke through the grey-scale rasteriser, whose per-row cell lists made it
    // most of a frame's cost.
    auto addStepCurve = [this](const QString& name, const QPen& pen) {
        QCPGraph* g = m_plot->addGraph();
        g->setName(name);
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(pen);
        g->setAdaptiveSampling(false);
        g->setLayer(QStringLiteral("curves"));
        g->setAntialiased(false);
        return g;
    };
    m_allocated = addStepCurve(QObject::tr("allocated"), QPen(kAllocatedColor, 1)); // width 1: the fast line path, no stroker
    // A min/max-downsampled curve has a vertical edge in almost every pixel column: an
    // aliased fill keeps a replot fast.
    m_allocated->setAntialiasedFill(false);
    m_reserved = addStepCurve(QObject::tr("reserved"), QPen(kReservedColor, 1));

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

    m_filtered = addStepCurve(QObject::tr("filtered allocations"), QPen(kSelectionColor, 2));
    m_filtered->removeFromLegend();
    // Dashed and two pixels wide so that it stays apart from the recorded reserved curve
    // where the two coincide.
    m_simulated = addStepCurve(QString(), QPen(kSimulatedReservedColor, 2, Qt::DashLine));
    m_simulated->removeFromLegend();

    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
    m_plot->yAxis->setLabel(QObject::tr("memory"));
    m_plot->xAxis->setNumberFormat(QStringLiteral("g"));
    m_plot->xAxis->setNumberPrecision(8);

    // Header row: title on the left, legend on the right, out of the data's way.
    auto* header = new QCPLayoutGrid;
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, header);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_title = new QCPTextElement(m_plot, QString(), QFont(font.family(), font.pointSize() + 1, QFont::Bold));
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
    m_peakLabel->setFont(QFont(font.family(), font.pointSize(), QFont::Bold));
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
    // The peak's marker and the capacity's line and label above the areas and curves: a label
    // placed beside the peak (when above it is taken) sits half over the area under it.
    m_plot->addLayer(QStringLiteral("labels"), m_plot->layer(QStringLiteral("curves")), QCustomPlot::limAbove);
    for (QCPLayerable* item : std::initializer_list<QCPLayerable*>{m_peakTracer, m_peakLabel, m_capacityLine, m_capacityLabel})
        item->setLayer(QStringLiteral("labels"));

    m_emptyText = new QCPItemText(m_plot);
    m_emptyText->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyText->position->setCoords(0.5, 0.4);
    m_emptyText->setPositionAlignment(Qt::AlignCenter);
    m_emptyText->setTextAlignment(Qt::AlignCenter);
    m_emptyText->setFont(QFont(font.family(), font.pointSize() + 2));
    m_emptyText->setPadding(QMargins(10, 8, 10, 8));
    m_emptyText->setPen(QPen(Qt::gray));
}

std::optional<TensorCategory> TimelinePlotItems::legendCategory(QCPAbstractLegendItem* item) const
{
    auto* pli = qobject_cast<QCPPlottableLegendItem*>(item);
    if (!pli)
        return std::nullopt;
    const auto& order = categoryStackOrder();
    for (size_t p = 0; p < order.size(); ++p)
        if (pli->plottable() == m_categoryGraphs[p])
            return order[p];
    return std::nullopt;
}

bool TimelinePlotItems::updateLegend(const DeviceAnalysis* analysis, bool byCategory, const QPalette& palette,
                                     bool reservedRecorded)
{
    m_categoryPresent.fill(false);
    if (analysis) {
        // A category is in the legend when it ever holds memory: at the peak, at the
        // end, or anywhere (one look at every allocation's class).
        for (size_t i = 0; i < analysis->classes.size(); ++i)
            m_categoryPresent[size_t(analysis->classes[i].category)] = true;
    }
    const bool categories = std::any_of(m_categoryPresent.begin(), m_categoryPresent.end(), [](bool b) { return b; });
    const auto& order = categoryStackOrder();
    const QColor text = palette.color(QPalette::WindowText);
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
    QColor fill = kAllocatedColor;
    fill.setAlpha(kAllocatedFillAlpha);
    m_allocated->setBrush(categories || byCategory ? QBrush(Qt::NoBrush) : QBrush(fill));
    m_allocated->setPen(QPen(categories ? text : kAllocatedColor, 1));
    // Legend order: totals, then the categories top of stack first (as drawn).
    m_allocated->removeFromLegend();
    m_reserved->removeFromLegend();
    m_allocated->addToLegend();
    m_reserved->setVisible(reservedRecorded);
    if (reservedRecorded)
        m_reserved->addToLegend();
    m_simulated->removeFromLegend();
    if (!m_simulated->name().isEmpty())
        m_simulated->addToLegend();
    for (size_t p = order.size(); p-- > 0;)
        if (m_plot->legend->hasItemWithPlottable(m_categoryGraphs[p])) {
            m_categoryGraphs[p]->removeFromLegend();
            m_categoryGraphs[p]->addToLegend();
        }
    return categories;
}

void TimelinePlotItems::setSimulatedReserved(const QString& label)
{
    m_simulated->setName(label);
    if (label.isEmpty())
        m_simulated->removeFromLegend();
}

void TimelinePlotItems::setFilterLabel(const QString& label)
{
    m_filtered->setName(label);
    if (label.isEmpty())
        m_filtered->removeFromLegend();
    else if (!m_plot->legend->hasItemWithPlottable(m_filtered))
        m_filtered->addToLegend();
}

void TimelinePlotItems::applyPalette(const QPalette& pal)
{
    const QColor text = pal.color(QPalette::WindowText);
    m_plot->setBackground(pal.brush(QPalette::Base));
    QColor grid = text;
    grid.setAlpha(28);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        applyAxisColors(axis, text, QPen(grid, 0)); // solid cosmetic: a dotted pen is stroked on every replot
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
}

void TimelinePlotItems::setTitle(const QString& title)
{
    m_title->setText(title);
}

void TimelinePlotItems::setEmptyText(const QString& text)
{
    m_emptyText->setText(text);
}

void TimelinePlotItems::setHasEvents(bool haveEvents)
{
    m_peakTracer->setVisible(haveEvents);
    m_peakLabel->setVisible(haveEvents);
    m_emptyText->setVisible(!haveEvents);
    m_plot->xAxis->setTicks(haveEvents);
    m_plot->xAxis->setTickLabels(haveEvents);
}

void TimelinePlotItems::setEventIndexTicks(bool eventIndex)
{
    if (eventIndex) {
        // Whole events only: nice multiples of one, never "-0.8".
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        m_plot->xAxis->setTicker(ticker);
    } else {
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }
}

void TimelinePlotItems::setPeak(double key, int64_t bytes, const QString& label)
{
    m_peakKey = key;
    m_peakTracer->position->setCoords(key, static_cast<double>(bytes));
    m_peakLabel->setText(label);
}

void TimelinePlotItems::setCapacity(int64_t bytes, const QString& label)
{
    m_capacityLine->setVisible(bytes > 0);
    m_capacityLabel->setVisible(bytes > 0);
    if (bytes > 0) {
        m_capacityLine->point1->setCoords(0, double(bytes));
        m_capacityLine->point2->setCoords(1, double(bytes));
        m_capacityLabel->position->setCoords(0.005, double(bytes));
        m_capacityLabel->setText(label);
    }
}

QString TimelinePlotItems::capacityLabel() const
{
    return m_capacityLine->visible() ? m_capacityLabel->text() : QString();
}

void TimelinePlotItems::clearOomMarkers()
{
    for (const OomMarker& m : m_ooms) {
        m_plot->removeItem(m.line);
        m_plot->removeItem(m.label);
    }
    m_ooms.clear();
}

void TimelinePlotItems::addOomMarker(double key, const QString& label, const QFont& font, const QColor& background)
{
    const size_t row = m_ooms.size();
    OomMarker m;
    m.key = key;
    m.line = new QCPItemStraightLine(m_plot);
    m.line->setPen(QPen(kOomColor, 1.5, Qt::DashLine));
    m.line->point1->setCoords(m.key, 0);
    m.line->point2->setCoords(m.key, 1);
    m.label = new QCPItemText(m_plot);
    m.label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m.label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m.label->position->setCoords(m.key, 0.06 + 0.08 * double(row % 5));
    m.label->setText(label);
    m.label->setColor(kOomColor);
    m.label->setFont(font);
    m.label->setPadding(QMargins(4, 2, 4, 2));
    m.label->setBrush(background);
    m_ooms.push_back(m);
}

void TimelinePlotItems::updateLabelAlignment(const QCPRange& r)
{
    auto alignFor = [&r](double key) -> Qt::Alignment {
        const double f = (key - r.lower) / r.size();
        if (f > 0.8)
            return Qt::AlignRight;
        if (f < 0.2)
            return Qt::AlignLeft;
        return Qt::AlignHCenter;
    };
    m_peakAlign = alignFor(m_peakKey);
    for (const OomMarker& m : m_ooms) {
        const Qt::Alignment h = alignFor(m.key) == Qt::AlignRight ? Qt::AlignRight : Qt::AlignLeft;
        m.label->setPositionAlignment(Qt::AlignTop | h);
    }
    placeLabels();
}

QRectF TimelinePlotItems::phaseStrip() const
{
    // As tall as timelineoverlay.cpp draws it (its font is the label's size, not bold).
    const QRect area = m_plot->axisRect()->rect();
    const int textH = QFontMetrics(m_peakLabel->font()).height() + 2;
    return QRectF(area.left(), area.top(), area.width(), std::max(double(textH), area.height() * kPhaseBandRatio));
}

std::vector<std::pair<QString, QRectF>> TimelinePlotItems::markerLabels() const
{
    std::vector<std::pair<QString, QRectF>> out;
    auto add = [&out](const QCPItemText* t) {
        if (t->visible() && !t->text().isEmpty())
            out.emplace_back(t->text(), QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition()));
    };
    add(m_peakLabel);
    add(m_capacityLabel);
    for (const OomMarker& m : m_ooms)
        add(m.label);
    return out;
}

namespace {

QRectF labelRect(const QCPItemText* t)
{
    return QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition());
}

bool clear(const QCPItemText* t, const std::vector<QRectF>& taken)
{
    const QRectF r = labelRect(t);
    return std::none_of(taken.begin(), taken.end(), [&r](const QRectF& o) { return r.intersects(o); });
}

} // namespace

bool TimelinePlotItems::fitLegend()
{
    // As many columns as fit beside the title at this width, so an entry is never cut (the
    // simulated line's "reserved, simulated (recorded setting)" at 1280 px ran off the edge and
    // pushed the title off the left).
    QCPLegend* legend = m_plot->legend;
    int widest = 1;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))
            widest = std::max(widest, item->minimumOuterSizeHint().width());
    const int titleW = QFontMetrics(m_title->font()).horizontalAdvance(m_title->text()) + 24;
    const QMargins m = legend->margins();
    const int room = m_plot->viewport().width() - titleW - m.left() - m.right();
    const int columns = std::clamp((room + legend->columnSpacing()) / (widest + legend->columnSpacing()), 1, 6);
    if (columns == legend->wrap())
        return false;
    legend->setWrap(columns);
    legend->setFillOrder(legend->fillOrder(), true); // a new wrap moves only what is added later
    return true;
}

void TimelinePlotItems::placeLabels()
{
    const QRectF strip = phaseStrip();
    const QRect area = m_plot->axisRect()->rect();
    std::vector<QRectF> taken{strip};
    // The OOM labels in rows under the phase names' strip (not at a share of the height, which
    // in a short plot is inside the strip).
    for (size_t row = 0; row < m_ooms.size(); ++row) {
        QCPItemText* label = m_ooms[row].label;
        const double h = labelRect(label).height();
        const double y = strip.bottom() + 3 + double(row % 5) * (h + 2);
        label->position->setCoords(m_ooms[row].key, (y - area.top()) / std::max(1, area.height()));
        taken.push_back(labelRect(label));
    }
    // The capacity label above its line, else under it.
    if (m_capacityLabel->visible()) {
        m_capacityLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        if (!clear(m_capacityLabel, taken))
            m_capacityLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        taken.push_back(labelRect(m_capacityLabel));
    }
    // The peak's: above it, beside it (inwards), under it, or beside on the other side: the
    // first place clear of the others.
    constexpr double kGap = 9; // past the tracer's circle
    const bool inwardsLeft = m_peakAlign == Qt::AlignRight;
    const Qt::Alignment inwards = inwardsLeft ? Qt::AlignRight : Qt::AlignLeft;
    const Qt::Alignment outwards = inwardsLeft ? Qt::AlignLeft : Qt::AlignRight;
    const std::array<std::pair<QPointF, Qt::Alignment>, 4> places{{
        {{0, -kGap}, Qt::AlignBottom | m_peakAlign},
        {{inwardsLeft ? -kGap : kGap, 0}, Qt::AlignVCenter | inwards},
        {{0, kGap}, Qt::AlignTop | m_peakAlign},
        {{inwardsLeft ? kGap : -kGap, 0}, Qt::AlignVCenter | outwards},
    }};
    for (const auto& [offset, align] : places) {
        m_peakLabel->position->setCoords(offset);
        m_peakLabel->setPositionAlignment(align);
        if (clear(m_peakLabel, taken))
            return;
    }
    m_peakLabel->position->setCoords(places[0].first);
    m_peakLabel->setPositionAlignment(places[0].second);
}

} // namespace headroom
