// SPDX-License-Identifier: MIT
#include "core/replay/allocatorstate.h"
#include "core/replay/allocatorconstants.h"

#include <algorithm>
#include <cstdint>

namespace headroom {

int64_t allocatorRoundSize(int64_t requested)
{
    using allocator::kMinBlock;
    if (requested < kMinBlock)
        return kMinBlock;
    if (requested > INT64_MAX - kMinBlock)
        return requested; // no room to round up (only absurd sizes from a damaged file)
    return (requested + kMinBlock - 1) / kMinBlock * kMinBlock;
}

AllocatorState recordedAllocatorState(const DeviceData& dev)
{
    AllocatorState st;
    st.recorded = true;
    st.event = static_cast<int64_t>(dev.trace.count()) - 1;
    std::vector<size_t> order(dev.segments.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return dev.segments[a].address < dev.segments[b].address; });
    for (size_t i : order) {
        const Segment& s = dev.segments[i];
        StateSegment seg;
        seg.address = s.address;
        seg.size = s.totalSize;
        seg.stream = s.stream;
        seg.largePool = s.largePool;
        seg.poolId = s.poolId;
        seg.firstBlock = static_cast<uint32_t>(st.blocks.size());
        st.reserved += s.totalSize;
        for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount && b < dev.blocks.size(); ++b) {
            const Block& blk = dev.blocks[b];
            StateBlock sb;
            sb.address = blk.address;
            sb.size = blk.size;
            sb.state = blk.state == BlockState::Unknown ? BlockState::Inactive : blk.state;
            sb.stack = blk.stack;
            switch (sb.state) {
            case BlockState::ActiveAllocated:
                sb.requested = blk.requestedSize;
                st.allocated += blk.requestedSize;
                st.allocatedBlocks += blk.size;
                st.internal += std::max<int64_t>(0, blk.size - blk.requestedSize);
                seg.allocated += blk.size;
                break;
            case BlockState::ActivePendingFree:
                sb.requested = blk.requestedSize;
                st.allocated += blk.requestedSize;
                st.pendingFree += blk.size;
                seg.allocated += blk.size;
                break;
            default:
                st.inactive += blk.size;
                ++st.inactiveBlocks;
                st.largestFree = std::max(st.largestFree, blk.size);
                break;
            }
            st.blocks.push_back(sb);
        }
        seg.blockCount = static_cast<uint32_t>(st.blocks.size()) - seg.firstBlock;
        st.segments.push_back(seg);
    }
    return st;
}

int64_t AllocatorState::unusableFor(int64_t request) const
{
    int64_t bytes = 0;
    for (const StateBlock& b : blocks)
        if (b.state == BlockState::Inactive && b.size < request)
            bytes += b.size;
    return bytes;
}

std::vector<AllocatorState::PoolShare> AllocatorState::privatePools() const
{
    std::vector<PoolShare> out;
    for (const StateSegment& s : segments) {
        if (!s.privatePool())
            continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const PoolShare& p) { return p.poolId == s.poolId; });
        if (it == out.end())
            it = out.insert(std::upper_bound(out.begin(), out.end(), s.poolId,
                                             [](const auto& id, const PoolShare& p) { return id < p.poolId; }),
                            PoolShare{s.poolId});
        ++it->segments;
        it->reserved += s.size;
        it->allocated += s.allocated;
    }
    return out;
}

} // namespace headroom
