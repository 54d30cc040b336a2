// SPDX-License-Identifier: MIT
#include "core/replay.h"

#include <algorithm>
#include "core/addressmap.h"
#include "core/hugepages.h"

namespace headroom {

MemoryTimeline replayDevice(const DeviceData& dev)
{
    MemoryTimeline t;
    t.device = dev.device;
    const TraceEvents& ev = dev.trace;
    const size_t n = ev.count();

    int64_t finalReserved = 0;
    int64_t finalAllocated = 0;
    for (const Segment& s : dev.segments)
        finalReserved += s.totalSize;
    for (const Block& b : dev.blocks)
        if (b.state == BlockState::ActiveAllocated)
            finalAllocated += b.size;

    if (n == 0) {
        t.initialAllocated = finalAllocated;
        t.initialReserved = finalReserved;
        t.peakAllocated = finalAllocated;
        t.peakReserved = finalReserved;
        for (const Block& b : dev.blocks)
            if (b.state == BlockState::ActiveAllocated)
                t.allocations.push_back({b.address, b.requestedSize, Allocation::kBeforeWindow,
                                         Allocation::kStillAlive, b.stack});
        t.ghostBlockCount = t.initialAllocationCount = static_cast<int64_t>(t.allocations.size());
        return t;
    }

    reserveHuge(t.allocated, n);
    reserveHuge(t.reserved, n);
    t.allocated.resize(n);
    t.reserved.resize(n);
    AddressMap open; // addr -> allocation index
    reserveHuge(t.allocations, n / 2 + 16);
    int64_t running = 0;     // allocated delta since the start
    int64_t initial = 0;     // allocations alive before the window
    int64_t reservedDelta = 0;
    // A free_requested that no free_completed (or re-alloc) follows at the same address is
    // still pending at snapshot time. Tracked forwards: `pending` holds the addresses whose
    // last alloc/free action was a free_requested; it stays as small as the frees in flight
    // (a backward pass needed a map of every address of the trace: slower, and much larger).
    AddressMap pending(64);
    auto settlePending = [&](uint64_t addr, TraceAction a) {
        if (pending.size() > 0 && pending.find(addr) != AddressMap::kMissing) {
            if (a == TraceAction::FreeRequested) {
                ++t.pendingFreeCount; // the earlier request was never completed
                return;
            }
            pending.erase(addr);
        } else if (a == TraceAction::FreeRequested) {
            pending.set(addr, 1);
        }
    };
    for (size_t i = 0; i < n; ++i) {
        const int64_t size = ev.size[i];
        switch (ev.action[i]) {
        case TraceAction::FreeRequested:
            settlePending(ev.addr[i], TraceAction::FreeRequested);
            break;
        case TraceAction::Alloc: {
            settlePending(ev.addr[i], TraceAction::Alloc);
            if (const uint32_t prev = open.find(ev.addr[i]); prev != AddressMap::kMissing) {
                // The address was reused without a recorded free (events lost): close the old one.
                Allocation& old = t.allocations[prev];
                old.end = static_cast<int64_t>(i);
                running -= old.size;
            }
            open.set(ev.addr[i], static_cast<uint32_t>(t.allocations.size()));
            t.allocations.push_back({ev.addr[i], size, static_cast<int64_t>(i), Allocation::kStillAlive, ev.stack[i]});
            running += size;
            break;
        }
        case TraceAction::FreeCompleted:
        case TraceAction::Free: {
            settlePending(ev.addr[i], TraceAction::Free);
            if (const uint32_t idx = open.find(ev.addr[i]); idx != AddressMap::kMissing) {
                Allocation& a = t.allocations[idx];
                a.end = static_cast<int64_t>(i);
                running -= a.size;
                open.erase(ev.addr[i]);
            } else {
                // Freed but never allocated in the window: alive since before it.
                initial += size;
                running -= size;
                t.allocations.push_back({ev.addr[i], size, Allocation::kBeforeWindow, static_cast<int64_t>(i), ev.stack[i]});
                ++t.initialAllocationCount;
            }
            break;
        }
        case TraceAction::SegmentAlloc:
        case TraceAction::SegmentMap:
            reservedDelta += size;
            break;
        case TraceAction::SegmentFree:
        case TraceAction::SegmentUnmap:
            reservedDelta -= size;
            break;
        default:
            break;
        }
        t.allocated[i] = running;
        t.reserved[i] = reservedDelta;
    }

    t.pendingFreeCount += static_cast<int64_t>(pending.size());

    // Ghost blocks: active at the end with no open allocation.
    for (const Block& b : dev.blocks) {
        if (b.state != BlockState::ActiveAllocated || open.find(b.address) != AddressMap::kMissing)
            continue;
        initial += b.requestedSize;
        t.allocations.push_back({b.address, b.requestedSize, Allocation::kBeforeWindow, Allocation::kStillAlive, b.stack});
        ++t.initialAllocationCount;
        ++t.ghostBlockCount;
    }

    t.initialAllocated = initial;
    t.initialReserved = finalReserved - reservedDelta;
    // Curve formats (Chrome traces with Total Allocated/Reserved, profiler timelines) carry
    // the allocator's own totals: they win over the replayed sums, which cannot see
    // memory allocated before the window and never freed in it. Allocations (lifetimes)
    // still come from the alloc/free pairing above.
    if (ev.totalAllocated.size() == n) {
        int64_t before = ev.totalAllocated[0];
        if (ev.action[0] == TraceAction::Alloc)
            before -= ev.size[0];
        else if (ev.action[0] == TraceAction::Free || ev.action[0] == TraceAction::FreeCompleted)
            before += ev.size[0];
        initial = std::max<int64_t>(0, before);
        t.initialAllocated = initial;
        for (size_t i = 0; i < n; ++i)
            t.allocated[i] = ev.totalAllocated[i] - initial; // the loop below adds `initial` back
    }
    if (ev.totalReserved.size() == n) {
        t.initialReserved = ev.totalReserved[0];
        for (size_t i = 0; i < n; ++i)
            t.reserved[i] = ev.totalReserved[i] - t.initialReserved;
    }
    t.peakAllocated = initial;
    t.peakEventIndex = -1;
    t.peakReserved = t.initialReserved;
    for (size_t i = 0; i < n; ++i) {
        t.allocated[i] += initial;
        t.reserved[i] += t.initialReserved;
        if (t.allocated[i] > t.peakAllocated) {
            t.peakAllocated = t.allocated[i];
            t.peakEventIndex = static_cast<int64_t>(i);
        }
        t.peakReserved = std::max(t.peakReserved, t.reserved[i]);
    }
    return t;
}

int64_t MemoryTimeline::eventAtTime(const TraceEvents& trace, int64_t timeUs)
{
    if (trace.count() == 0)
        return -1;
    auto it = std::upper_bound(trace.timeUs.begin(), trace.timeUs.end(), timeUs);
    if (it == trace.timeUs.begin())
        return 0;
    return (it - trace.timeUs.begin()) - 1;
}

} // namespace headroom
