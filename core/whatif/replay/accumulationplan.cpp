// SPDX-License-Identifier: MIT
#include "core/whatif/replay/accumulationplan.h"

#include <algorithm>

namespace headroom {

AccumulationPlan planAccumulation(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                  const PhaseAnalysis& phases, const Iteration& it)
{
    AccumulationPlan plan;
    // The iteration's first forward event and its last backward one, from the phase spans.
    int64_t forward = -1, backwardEnd = -1;
    for (const PhaseSpan& span : phases.spans) {
        if (span.endEvent < it.startEvent || span.startEvent > it.endEvent)
            continue;
        if (span.phase == Phase::Forward && forward < 0)
            forward = std::max(span.startEvent, it.startEvent);
        if (span.phase == Phase::Backward)
            backwardEnd = std::min(span.endEvent, it.endEvent);
    }
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
