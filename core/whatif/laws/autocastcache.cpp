// SPDX-License-Identifier: MIT
#include "core/whatif/laws/autocastcache.h"

#include "core/whatif/laws/stackreadings.h"

#include <algorithm>
#include <unordered_map>

namespace headroom {

std::optional<WeightUses> weightUsesBefore(const MemoryTimeline& tl, const FrameTable& frames, int64_t from,
                                           int64_t to, int64_t at)
{
    std::unordered_map<uint32_t, bool> layerStack; // a few thousand stacks for many allocations
    int64_t uses = 0, before = 0;
    std::vector<int64_t> events;
    for (const Allocation& a : tl.allocations) {
        if (a.start < from || a.start > to)
            continue;
        auto it = layerStack.find(a.stack);
        if (it == layerStack.end())
            it = layerStack.emplace(a.stack, weightLayerMade(frames, a.stack)).first;
        if (!it->second)
            continue;
        ++uses;
        before += a.start <= at;
        events.push_back(a.start);
    }
    if (uses == 0)
        return std::nullopt;
    std::sort(events.begin(), events.end());
    return WeightUses{before, uses, std::move(events)};
}

std::vector<WhatIfState::ForwardMoment> forwardMoments(const MemoryTimeline& tl, int64_t start, int64_t peak,
                                                       const WeightUses& uses)
{
    std::vector<WhatIfState::ForwardMoment> out;
    auto at = [&](int64_t e) { return e >= 0 && size_t(e) < tl.allocated.size() ? double(tl.allocated[size_t(e)]) : 0.0; };
    const double base = at(start), top = at(peak) - base;
    if (top <= 0 || uses.events.empty())
        return out;
    for (size_t k = 0; k < uses.events.size(); ++k)
        out.push_back({double(k + 1) / double(uses.events.size()),
                       std::clamp((at(uses.events[k]) - base) / top, 0.0, 1.0)});
    return out;
}

} // namespace headroom
