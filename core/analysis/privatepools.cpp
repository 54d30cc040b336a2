// SPDX-License-Identifier: MIT
#include "core/analysis/privatepools.h"

#include "core/analysis/timelinebands.h"
#include "core/model/recordedtensors.h"

#include <algorithm>

namespace headroom {

namespace {

using PoolId = PrivatePoolCurves::PoolId;
constexpr PoolId kDefaultPool{0, 0};

struct Range {
    uint64_t begin, end;
    PoolId pool;
};

/// The final segments of private pools, by address.
std::vector<Range> poolRanges(const DeviceData& device)
{
    std::vector<Range> out;
    for (const Segment& s : device.segments)
        if (s.poolId != kDefaultPool)
            out.push_back({s.address, s.address + uint64_t(std::max<int64_t>(0, s.totalSize)), s.poolId});
    std::sort(out.begin(), out.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    return out;
}

PoolId poolByAddress(const std::vector<Range>& ranges, uint64_t addr)
{
    auto it = std::upper_bound(ranges.begin(), ranges.end(), addr, [](uint64_t a, const Range& r) { return a < r.begin; });
    if (it == ranges.begin())
        return kDefaultPool;
    --it;
    return addr < it->end ? it->pool : kDefaultPool;
}

} // namespace

std::vector<int> allocationPools(const DeviceData& device, const MemoryTimeline& tl, std::vector<PoolId>& ids)
{
    const std::vector<Range> ranges = poolRanges(device);
    std::vector<PoolId> byAllocation(tl.allocations.size(), kDefaultPool);
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (const auto p = entryPoolAt(device.trace.poolIds, a.start))
            byAllocation[i] = *p;
        else if (!ranges.empty())
            byAllocation[i] = poolByAddress(ranges, a.addr);
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

} // namespace headroom
