// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/privatepools.h"
#include "core/util/minmaxpyramid.h"

#include <vector>

class QCustomPlot;
class QCPGraph;

namespace headroom {

class TimelineSampler;

/// Each CUDA-graph / MemPool private pool's live bytes over the run, a dotted line apiece
/// with its own legend entry ("private pool (1, 0)"), drawn over the stacked areas that count
/// every pool together. The plot owns the graphs; this class holds them.
class PoolCurveItems {
public:
    explicit PoolCurveItems(QCustomPlot* plot);

    /// The pools of one device's data (null or empty: none shown).
    void set(const PrivatePoolCurves* pools);
    void update(const TimelineSampler& sampler);
    size_t count() const { return m_graphs.size(); }
    QCPGraph* graph(size_t pool) const { return m_graphs[pool]; }

private:
    QCustomPlot* m_plot;
    const PrivatePoolCurves* m_pools = nullptr;
    std::vector<QCPGraph*> m_graphs;
    std::vector<MinMaxPyramid> m_pyramids;
};

} // namespace headroom
