// SPDX-License-Identifier: MIT
#include "core/whatif/accumulationplan.h"

#include <algorithm>

namespace headroom {

namespace {

/// The first event of `want` in [from, to] (-1: none), or the last with `last`.
int64_t phaseEdge(const std::vector<Phase>& phase, int64_t from, int64_t to, Phase want, bool last)
{
    to = std::min<int64_t>(to, int64_t(phase.size()) - 1);
    if (last) {
        for (int64_t e = to; e >= from; --e)
            if (phase[size_t(e)] == want)
                return e;
    } else {
        for (int64_t e = std::max<int64_t>(0, from); e <= to; ++e)
            if (phase[size_t(e)] == want)
                return e;
    }
    return -1;
}

} // namespace

AccumulationPlan planAccumulation(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                  const PhaseAnalysis& phases, const Iteration& it)
{
    AccumulationPlan plan;
    const int64_t forward = phaseEdge(phases.eventPhase, it.startEvent, it.endEvent, Phase::Forward, false);
    const int64_t backwardEnd = phaseEdge(phases.eventPhase, it.startEvent, it.endEvent, Phase::Backward, true);
    if (forward < 0 || backwardEnd < forward)
        return plan;
    plan.forwardStart = forward;
    for (size_t i = 0; i < tl.allocations.size() && i < classes.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (classes[i].category != TensorCategory::Gradient || a.start == Allocation::kBeforeWindow ||
            a.start < forward || a.start > backwardEnd || (a.end != Allocation::kStillAlive && a.end <= backwardEnd))
            continue;
        plan.moves.push_back({forward, uint32_t(i), false});
        plan.moves.push_back({a.start + 1, uint32_t(i), true});
        ++plan.gradients;
        plan.gradientBytes += a.size;
    }
    std::stable_sort(plan.moves.begin(), plan.moves.end(),
                     [](const CheckpointPlan::Move& x, const CheckpointPlan::Move& y) { return x.event < y.event; });
    return plan;
}

} // namespace headroom
