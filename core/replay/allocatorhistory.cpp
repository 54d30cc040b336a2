// SPDX-License-Identifier: MIT
#include "core/replay/allocatorhistory.h"
#include "core/replay/allocatorconstants.h"

#include "core/model/recordedtensors.h"
#include "core/replay/addressmap.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace headroom {

namespace {

constexpr int64_t kSmallSegment = allocator::kSmallBuffer; ///< small-pool segments are 2 MiB
constexpr int64_t kMaxUnsplit = allocator::kSmallSize;     ///< a large-pool block keeps a remainder <= 1 MiB

bool isSegmentOpen(TraceAction a) { return a == TraceAction::SegmentAlloc || a == TraceAction::SegmentMap; }
bool isSegmentClose(TraceAction a) { return a == TraceAction::SegmentFree || a == TraceAction::SegmentUnmap; }

/// Ends every open span that [released.address, +size) overlaps at `released.end` (one
/// segment_unmap may release the pages of many segment_map events); what stays mapped of each
/// continues as a new span, and the parts that no span covered were reserved before the window.
void closeRange(std::map<uint64_t, size_t>& open, std::vector<AllocatorHistory::SegmentSpan>& spans,
                const AllocatorHistory::SegmentSpan& released)
{
    const int64_t at = released.end;
    const uint64_t lo = released.address;
    const uint64_t hi = lo + uint64_t(std::max<int64_t>(1, released.size));
    auto it = open.upper_bound(lo);
    if (it != open.begin() && spans[std::prev(it)->second].address + uint64_t(spans[std::prev(it)->second].size) > lo)
        --it;
    uint64_t cursor = lo;
    auto uncovered = [&](uint64_t from, uint64_t to) {
        if (to > from && released.size > 0)
            spans.push_back({from, int64_t(to - from), released.stream, Allocation::kBeforeWindow, at,
                             released.largePool, released.expandable});
    };
    while (it != open.end() && it->first < hi) {
        const AllocatorHistory::SegmentSpan old = spans[it->second];
        const uint64_t oldEnd = old.address + uint64_t(old.size);
        spans[it->second].end = at;
        it = open.erase(it);
        uncovered(cursor, old.address);
        if (old.address < lo) {
            open[old.address] = spans.size();
            spans.push_back({old.address, int64_t(lo - old.address), old.stream, at, Allocation::kStillAlive,
                             old.largePool, old.expandable, old.poolId});
        }
        if (oldEnd > hi) {
            open[hi] = spans.size();
            spans.push_back({hi, int64_t(oldEnd - hi), old.stream, at, Allocation::kStillAlive, old.largePool,
                             old.expandable, old.poolId});
        }
        cursor = std::max(cursor, oldEnd);
    }
    uncovered(cursor, hi);
}

/// Adjacent mapped ranges of an expandable segment are one address range to the allocator:
/// a block (a 4.94 GiB tensor) spans the pages of many segment_map events, so the ranges are
/// joined before blocks are placed, or the block would be cut at the first page boundary and
/// the rest of it counted as cached free.
void mergeMappedRanges(std::vector<StateSegment>& segments)
{
    size_t out = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
        if (out > 0) {
            StateSegment& prev = segments[out - 1];
            const StateSegment& s = segments[i];
            if (prev.expandable && s.expandable && prev.stream == s.stream && prev.poolId == s.poolId &&
                prev.address + uint64_t(prev.size) == s.address) {
                prev.size += s.size;
                prev.beforeWindow = prev.beforeWindow && s.beforeWindow;
                continue;
            }
        }
        segments[out++] = segments[i];
    }
    segments.resize(out);
}

} // namespace

AllocatorHistory::AllocatorHistory(const DeviceData& dev, const MemoryTimeline& tl)
    : m_live(tl)
    , m_events(static_cast<int64_t>(dev.trace.count()))
{
    const TraceEvents& ev = dev.trace;
    const auto n = static_cast<size_t>(m_events);

    // Segment lifetimes. Unmaps of expandable segments may release part of a mapped range:
    // the range ends there and what stays mapped continues as new spans.
    std::map<uint64_t, size_t> open; // address -> span
    for (size_t i = 0; i < n; ++i) {
        const TraceAction a = ev.action[i];
        if (!isSegmentOpen(a) && !isSegmentClose(a))
            continue;
        const uint64_t addr = ev.addr[i];
        const int64_t size = std::max<int64_t>(0, ev.size[i]);
        const auto at = static_cast<int64_t>(i);
        if (isSegmentOpen(a)) {
            if (auto it = open.find(addr); it != open.end()) { // a lost free: close the old one
                m_spans[it->second].end = at;
                open.erase(it);
            }
            open[addr] = m_spans.size();
            const bool mapped = a == TraceAction::SegmentMap;
            m_spans.push_back({addr, size, ev.streamAt(i), at, Allocation::kStillAlive, size != kSmallSegment,
                               mapped, entryPoolAt(ev.poolIds, at).value_or(std::pair<int64_t, int64_t>{0, 0})});
            continue;
        }
        closeRange(open, m_spans, {addr, size, ev.streamAt(i), Allocation::kBeforeWindow, at, size != kSmallSegment,
                                   a == TraceAction::SegmentUnmap});
    }
    // Final segments not (fully) covered by ranges reserved in the window were reserved
    // before it; their uncovered parts become spans alive from the start.
    for (const Segment& seg : dev.segments) {
        const uint64_t segEnd = seg.address + uint64_t(std::max<int64_t>(0, seg.totalSize));
        uint64_t cursor = seg.address;
        for (auto it = open.lower_bound(seg.address); it != open.end() && it->first < segEnd; ++it) {
            m_spans[it->second].largePool = seg.largePool;
            m_spans[it->second].expandable |= seg.expandable;
            if (seg.poolId != std::pair<int64_t, int64_t>{0, 0})
                m_spans[it->second].poolId = seg.poolId;
            // Copies: the push_back below may move m_spans (found by fuzz_snapshot).
            const uint64_t spanAddress = m_spans[it->second].address;
            const uint64_t spanEnd = spanAddress + uint64_t(m_spans[it->second].size);
            if (spanAddress > cursor)
                m_spans.push_back({cursor, int64_t(spanAddress - cursor), seg.stream, Allocation::kBeforeWindow,
                                   Allocation::kStillAlive, seg.largePool, seg.expandable, seg.poolId});
            cursor = std::max(cursor, spanEnd);
        }
        if (cursor < segEnd)
            m_spans.push_back({cursor, int64_t(segEnd - cursor), seg.stream, Allocation::kBeforeWindow,
                               Allocation::kStillAlive, seg.largePool, seg.expandable, seg.poolId});
    }

    // free_requested events: an allocation is pending free from there to its free_completed.
    const auto& allocs = tl.allocations;
    m_pendingFrom.assign(allocs.size(), -1);
    std::vector<uint32_t> eventAlloc(n, UINT32_MAX); // the allocation an event creates
    for (size_t k = 0; k < allocs.size(); ++k) {
        const Allocation& a = allocs[k];
        if (a.start >= 0 && size_t(a.start) < n)
            eventAlloc[size_t(a.start)] = uint32_t(k);
        else if (a.start == Allocation::kBeforeWindow && a.end >= 0 && size_t(a.end) < n)
            eventAlloc[size_t(a.end)] = uint32_t(k);
    }
    AddressMap live;      // address -> allocation born in the window
    AddressMap requested; // address -> free_requested event of an allocation from before the window
    for (size_t i = 0; i < n; ++i) {
        const uint64_t addr = ev.addr[i];
        switch (ev.action[i]) {
        case TraceAction::Alloc:
            if (eventAlloc[i] != UINT32_MAX)
                live.set(addr, eventAlloc[i]);
            requested.erase(addr);
            break;
        case TraceAction::FreeRequested:
            if (const uint32_t k = live.find(addr); k != AddressMap::kMissing) {
                if (m_pendingFrom[k] < 0)
                    m_pendingFrom[k] = static_cast<int64_t>(i);
            } else if (i < AddressMap::kMissing) {
                requested.set(addr, static_cast<uint32_t>(i));
            }
            break;
        case TraceAction::FreeCompleted:
        case TraceAction::Free:
            if (live.find(addr) != AddressMap::kMissing) {
                live.erase(addr);
            } else if (const uint32_t r = requested.find(addr); r != AddressMap::kMissing) {
                if (eventAlloc[i] != UINT32_MAX && ev.action[i] == TraceAction::FreeCompleted)
                    m_pendingFrom[eventAlloc[i]] = r;
                requested.erase(addr);
            }
            break;
        default:
            break;
        }
    }
}

AllocatorState AllocatorHistory::stateAt(const MemoryTimeline& tl, int64_t event) const
{
    AllocatorState st;
    const int64_t e = std::clamp<int64_t>(event, -1, m_events - 1);
    st.event = e;
    for (const SegmentSpan& s : m_spans)
        if (Allocation::alive(s.start, s.end, e)) {
            StateSegment seg;
            seg.address = s.address;
            seg.size = s.size;
            seg.stream = s.stream;
            seg.largePool = s.largePool;
            seg.beforeWindow = s.start == Allocation::kBeforeWindow;
            seg.expandable = s.expandable;
            seg.poolId = s.poolId;
            st.segments.push_back(seg);
            st.reserved += s.size;
        }
    std::sort(st.segments.begin(), st.segments.end(),
              [](const StateSegment& a, const StateSegment& b) { return a.address < b.address; });
    mergeMappedRanges(st.segments);

    // Place each live allocation in the segment holding its address.
    struct Placed {
        uint32_t segment;
        uint64_t address;
        uint32_t allocation;
    };
    std::vector<Placed> placed;
    const std::vector<uint32_t> live = m_live.liveAfter(tl, e);
    placed.reserve(live.size());
    for (uint32_t k : live) {
        const Allocation& a = tl.allocations[k];
        st.allocated += a.size;
        auto it = std::upper_bound(st.segments.begin(), st.segments.end(), a.addr,
                                   [](uint64_t addr, const StateSegment& s) { return addr < s.address; });
        if (it != st.segments.begin()) {
            --it;
            if (a.addr < it->address + uint64_t(it->size)) {
                placed.push_back({uint32_t(it - st.segments.begin()), a.addr, k});
                continue;
            }
        }
        ++st.unplacedCount;
        st.unplacedBytes += a.size;
    }
    std::sort(placed.begin(), placed.end(), [](const Placed& x, const Placed& y) {
        return x.segment != y.segment ? x.segment < y.segment : x.address < y.address;
    });

    auto addFree = [&](uint64_t from, uint64_t to) {
        if (to <= from)
            return;
        const auto size = int64_t(to - from);
        st.blocks.push_back({from, size, 0, BlockState::Inactive, StateBlock::kNoAllocation, 0});
        st.inactive += size;
        ++st.inactiveBlocks;
        st.largestFree = std::max(st.largestFree, size);
    };
    size_t p = 0;
    for (size_t si = 0; si < st.segments.size(); ++si) {
        StateSegment& seg = st.segments[si];
        seg.firstBlock = static_cast<uint32_t>(st.blocks.size());
        const uint64_t segEnd = seg.address + uint64_t(seg.size);
        uint64_t cursor = seg.address;
        for (; p < placed.size() && placed[p].segment == si; ++p) {
            const Allocation& a = tl.allocations[placed[p].allocation];
            addFree(cursor, a.addr);
            const uint64_t next = p + 1 < placed.size() && placed[p + 1].segment == si ? placed[p + 1].address : segEnd;
            uint64_t blockEnd = std::min<uint64_t>(std::max(next, a.addr), a.addr + uint64_t(allocatorRoundSize(a.size)));
            blockEnd = std::min(blockEnd, segEnd);
            // A large-pool block is not split when the rest would be 1 MiB or less: the
            // remainder is part of the block (internal fragmentation), not cached free.
            if (seg.largePool && next > blockEnd && next - blockEnd <= uint64_t(kMaxUnsplit))
                blockEnd = next;
            const int64_t size = blockEnd > a.addr ? int64_t(blockEnd - a.addr) : 0;
            const bool pending = m_pendingFrom[placed[p].allocation] >= 0 && m_pendingFrom[placed[p].allocation] <= e;
            st.blocks.push_back({a.addr, size, a.size, pending ? BlockState::ActivePendingFree : BlockState::ActiveAllocated,
                                 placed[p].allocation, a.stack});
            (pending ? st.pendingFree : st.allocatedBlocks) += size;
            st.internal += std::max<int64_t>(0, size - a.size);
            seg.allocated += size;
            cursor = std::max(cursor, blockEnd);
        }
        addFree(cursor, segEnd);
        seg.blockCount = static_cast<uint32_t>(st.blocks.size()) - seg.firstBlock;
    }
    return st;
}

} // namespace headroom
