// SPDX-License-Identifier: MIT
#include "ui/timeline/poolcurveitems.h"

#include "ui/timeline/timelinesampler.h"

#include <qcustomplot.h>

namespace headroom {

namespace {

/// Distinct from the category colours and the projection's: greys and a plum, as the
/// official viewer draws pools as grey envelopes.
QColor poolColor(size_t pool)
{
    static const QColor colors[] = {QColor(90, 90, 90), QColor(128, 60, 128), QColor(40, 110, 110), QColor(150, 110, 40)};
    return colors[pool % (sizeof(colors) / sizeof(colors[0]))];
}

} // namespace

PoolCurveItems::PoolCurveItems(QCustomPlot* plot)
    : m_plot(plot)
{
}

void PoolCurveItems::set(const PrivatePoolCurves* pools)
{
    for (QCPGraph* g : m_graphs)
        m_plot->removeGraph(g);
    m_graphs.clear();
    m_pyramids.clear();
    m_pools = pools && !pools->empty() ? pools : nullptr;
    if (!m_pools)
        return;
    for (size_t p = 0; p < m_pools->ids.size(); ++p) {
        QCPGraph* g = m_plot->addGraph();
        g->setName(QObject::tr("private pool (%1, %2)").arg(m_pools->ids[p].first).arg(m_pools->ids[p].second));
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(QPen(poolColor(p), 2, Qt::DotLine));
        g->setAdaptiveSampling(false);
        g->setLayer(QStringLiteral("curves"));
        g->setAntialiased(false);
        m_graphs.push_back(g);
        m_pyramids.emplace_back(m_pools->liveBytes[p]);
    }
}

void PoolCurveItems::update(const TimelineSampler& sampler)
{
    if (!m_pools)
        return;
    for (size_t p = 0; p < m_graphs.size(); ++p) {
        const std::vector<int64_t>& curve = m_pools->liveBytes[p];
        QVector<double> keys, values;
        const std::vector<int64_t> events = sampler.events(curve, m_pyramids[p]);
        sampler.fill(events, curve, 0, keys, values);
        if (!values.isEmpty() && !events.empty() && events.front() < 0)
            values[0] = values.size() > 1 ? values[1] : 0; // the state before event 0
        m_graphs[p]->setData(keys, values, true);
    }
}

} // namespace headroom
