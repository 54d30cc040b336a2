// SPDX-License-Identifier: MIT
#include "core/whatif/replay/castplan.h"

namespace headroom {

namespace {

/// The first event of the first forward, or of any phase after the setup; -1: none.
int64_t firstForward(const PhaseAnalysis& phases)
{
    int64_t first = -1;
    for (const PhaseSpan& span : phases.spans)
        if (span.phase != Phase::Setup && (first < 0 || span.startEvent < first))
            first = span.startEvent;
    return first;
}

bool aliveAt(const Allocation& a, int64_t event)
{
    return a.start != Allocation::kBeforeWindow && a.start < event &&
           (a.end == Allocation::kStillAlive || a.end >= event);
}

} // namespace

CastPlan planCast(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes, const PhaseAnalysis& phases,
                  const AllocationLaws& laws)
{
    CastPlan plan;
    const int64_t forward = firstForward(phases);
    const size_t n = std::min({tl.allocations.size(), classes.size(), laws.count()});
    int64_t lastParameter = -1;
    for (size_t i = 0; i < n; ++i) {
        const Allocation& a = tl.allocations[i];
        if (classes[i].category == TensorCategory::Parameter && a.start != Allocation::kBeforeWindow &&
            (forward < 0 || a.start < forward))
            lastParameter = std::max<int64_t>(lastParameter, a.start);
    }
    if (lastParameter < 0)
        return plan;
    plan.event = lastParameter + 1;
    std::vector<std::pair<int64_t, uint32_t>> alive;
    for (size_t i = 0; i < n; ++i) {
        const Allocation& a = tl.allocations[i];
        if (a.start == Allocation::kBeforeWindow || a.start >= plan.event)
            continue;
        plan.built.push_back(uint32_t(i));
        if (!aliveAt(a, plan.event) || laws.laws()[i].width != WidthClass::Float)
            continue;
        alive.emplace_back(a.start, uint32_t(i));
        if (classes[i].category == TensorCategory::Parameter)
            ++plan.parameters, plan.parameterBytes += a.size;
    }
    std::sort(alive.begin(), alive.end());
    for (const auto& [start, i] : alive)
        plan.cast.push_back(i);
    if (plan.cast.empty())
        plan = CastPlan{};
    return plan;
}

} // namespace headroom
