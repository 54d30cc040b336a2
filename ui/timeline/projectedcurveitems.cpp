// SPDX-License-Identifier: MIT
#include "ui/timeline/projectedcurveitems.h"

#include "core/whatif/projection/projectedtimeline.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/timelinesampler.h"
#include "ui/timeline/timelinestate.h"
#include "ui/timeline/timelinestyle.h"

#include <qcustomplot.h>

namespace headroom {

using namespace timelinestyle;

ProjectedCurveItems::ProjectedCurveItems(QCustomPlot* plot)
    : m_plot(plot)
{
    auto graph = [this](const QPen& pen) {
        QCPGraph* g = m_plot->addGraph();
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(pen);
        g->setAdaptiveSampling(false);
        g->setLayer(QStringLiteral("curves"));
        g->setAntialiased(false);
        g->removeFromLegend();
        return g;
    };
    // The band first, so the line draws over its fill.
    QColor band = kProjectedColor;
    band.setAlpha(40);
    m_low = graph(Qt::NoPen);
    m_high = graph(Qt::NoPen);
    m_high->setBrush(band);
    m_high->setChannelFillGraph(m_low);
    m_line = graph(QPen(kProjectedColor, 2, Qt::DashLine));
    m_peakLine = new QCPItemStraightLine(m_plot);
    m_peakLine->setPen(QPen(kProjectedColor, 2, Qt::DashLine));
    m_oomLine = new QCPItemStraightLine(m_plot);
    m_oomLine->setPen(QPen(kProjectedColor, 1.5, Qt::DashDotLine));
    m_oomLabel = new QCPItemText(m_plot);
    m_oomLabel->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_oomLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_oomLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_oomLabel->setColor(kProjectedColor);
    m_oomLabel->setText(QObject::tr("projected OOM"));
    hideAll();
}

void ProjectedCurveItems::hideAll()
{
    for (QCPGraph* g : {m_line, m_low, m_high}) {
        g->data()->clear();
        g->removeFromLegend();
    }
    m_peakLine->setVisible(false);
    m_oomLine->setVisible(false);
    m_oomLabel->setVisible(false);
}

void ProjectedCurveItems::set(std::shared_ptr<const ProjectedTimeline> projection, const QString& label)
{
    m_projection = std::move(projection);
    m_label = m_projection ? label : QString();
    m_pyramid = m_projection && m_projection->hasCurve() ? MinMaxPyramid(m_projection->allocated.central) : MinMaxPyramid();
    hideAll();
    if (!m_projection)
        return;
    m_line->setName(m_label);
    m_line->addToLegend();
    if (!m_projection->hasCurve()) {
        // The terms' projection has a peak and no history: a level, not a curve.
        m_peakLine->point1->setCoords(0, m_projection->peak);
        m_peakLine->point2->setCoords(1, m_projection->peak);
        m_peakLine->setVisible(true);
    }
}

void ProjectedCurveItems::update(const TimelineSampler& sampler, const TimelineState& state, int64_t initial)
{
    if (!m_projection || !m_projection->hasCurve() ||
        m_projection->allocated.central.size() != size_t(state.eventCount()))
        return;
    const TraceProjector::Curve& c = m_projection->allocated;
    const std::vector<int64_t> events = sampler.events(c.central, m_pyramid);
    QVector<double> keys, values;
    sampler.fill(events, c.central, initial, keys, values);
    m_line->setData(keys, values, true);
    // The band at the line's sample points: the extremes of a bucket may fall elsewhere in
    // it, but the band is a range of readings, not an event-exact curve.
    for (auto [curve, graph] : {std::pair{&c.low, m_low}, std::pair{&c.high, m_high}}) {
        keys.clear();
        values.clear();
        sampler.fillBlocks(events, *curve, TraceProjector::Curve::kBandBlock, initial, keys, values);
        graph->setData(keys, values, true);
    }
    const int64_t oom = m_projection->oomEvent;
    m_oomLine->setVisible(oom >= 0);
    m_oomLabel->setVisible(oom >= 0);
    if (oom >= 0) {
        const double key = state.keyOf(oom);
        m_oomLine->point1->setCoords(key, 0);
        m_oomLine->point2->setCoords(key, 1);
        m_oomLabel->position->setCoords(key, 0.12);
        if (m_projection->simulated && m_projection->simulated->capacity > 0)
            m_oomLabel->setText(QObject::tr("projected OOM (%1 for the allocator)")
                                    .arg(formatBytesQ(m_projection->simulated->capacity, 1)));
    }
}

} // namespace headroom
