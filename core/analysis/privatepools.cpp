// SPDX-License-Identifier: MIT
#include "core/analysis/privatepools.h"

#include "core/analysis/timelinebands.h"
#include "core/model/recordedtensors.h"
#include "core/replay/allocatorstate.h"
#include "core/replay/privatepoolranges.h"

#include <algorithm>

namespace headroom {

namespace {

using PoolId = PrivatePoolCurves::PoolId;
constexpr PoolId kDefaultPool{0, 0};

} // namespace

std::vector<int> allocationPools(const DeviceData& device, const MemoryTimeline& tl, std::vector<PoolId>& ids)
{
    const PrivatePoolRanges ranges(device);
    std::vector<PoolId> byAllocation(tl.allocations.size(), kDefaultPool);
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (const auto p = entryPoolAt(device.trace.poolIds, a.start))
            byAllocation[i] = *p;
        else if (!ranges.empty())
            byAllocation[i] = ranges.poolAt(a.addr);
        if (byAllocation[i] != kDefaultPool)
            ids.push_back(byAllocation[i]);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::vector<int> out(tl.allocations.size(), -1);
    for (size_t i = 0; i < out.size(); ++i)
        if (byAllocation[i] != kDefaultPool)
            out[i] = int(std::lower_bound(ids.begin(), ids.end(), byAllocation[i]) - ids.begin());
    return out;
}

PrivatePoolCurves privatePoolCurves(const DeviceData& device, const MemoryTimeline& tl)
{
    PrivatePoolCurves out;
    if (device.trace.poolIds.empty() &&
        std::none_of(device.segments.begin(), device.segments.end(), [](const Segment& s) { return s.poolId != kDefaultPool; }))
        return out;
    const std::vector<int> pools = allocationPools(device, tl, out.ids);
    for (size_t p = 0; p < out.ids.size(); ++p) {
        out.liveBytes.push_back(filteredLiveBytes(tl, device.trace.count(), [&](size_t i) { return pools[i] == int(p); }));
        const auto& c = out.liveBytes.back();
        out.peakBytes.push_back(c.empty() ? 0 : *std::max_element(c.begin(), c.end()));
    }
    return out;
}

std::vector<PrivatePoolSummary> privatePoolSummaries(const DeviceData& device, const MemoryTimeline& timeline)
{
    std::vector<PrivatePoolSummary> out;
    auto entry = [&](PoolId id) -> PrivatePoolSummary& {
        auto it = std::lower_bound(out.begin(), out.end(), id, [](const PrivatePoolSummary& p, PoolId x) { return p.id < x; });
        if (it == out.end() || it->id != id)
            it = out.insert(it, PrivatePoolSummary{id});
        return *it;
    };
    for (const AllocatorState::PoolShare& share : recordedAllocatorState(device).privatePools()) {
        PrivatePoolSummary& p = entry(share.poolId);
        p.segments = share.segments;
        p.reserved = share.reserved;
        p.allocated = share.allocated;
    }
    const PrivatePoolCurves curves = privatePoolCurves(device, timeline);
    for (size_t i = 0; i < curves.ids.size(); ++i)
        entry(curves.ids[i]).peakLive = curves.peakBytes[i];
    return out;
}

} // namespace headroom
