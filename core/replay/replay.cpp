// SPDX-License-Identifier: MIT
#include "core/replay/replay.h"

#include <algorithm>
#include "core/replay/addressmap.h"
#include "core/util/hugepages.h"

namespace headroom {

MemoryTimeline replayDevice(const DeviceData& dev)
{
    MemoryTimeline t;
    t.device = dev.device;
    const TraceEvents& ev = dev.trace;
    const size_t n = ev.count();

    const FinalTotals totals = finalTotals(dev);
    const int64_t finalReserved = totals.reserved;

    if (n == 0) {
        // The final state only: allocated is what its allocations hold, the tensors' requested
        // bytes, as a trace's alloc entries count them (the blocks' rounding is the allocator's,
        // reported with fragmentation), so the peak and the live allocations at it agree.
        t.initialAllocated = totals.requested;
        t.initialReserved = finalReserved;
        t.peakAllocated = totals.requested;
        t.peakReserved = finalReserved;
        for (const Block& b : dev.blocks)
            if (b.state == BlockState::ActiveAllocated)
                t.allocations.push_back({b.address, b.requestedSize, Allocation::kBeforeWindow,
                                         Allocation::kStillAlive, b.stack});
        t.ghostBlockCount = t.initialAllocationCount = static_cast<int64_t>(t.allocations.size());
        return t;
    }

    reserveHuge(t.allocated, n); // filled by push_back below: each page is written once, not zeroed first
    AddressMap open; // addr -> allocation index
    reserveHuge(t.allocations, n / 2 + 16);
    int64_t running = 0;     // allocated delta since the start
    int64_t initial = 0;     // allocations alive before the window
    int64_t reservedDelta = 0;
    // A free_requested that no free_completed (or re-alloc) follows at the same address is
    // still pending at snapshot time. Tracked forwards, mostly without a lookup of its own: an
    // open allocation carries a flag; `loose` holds the few requests at addresses that are not
    // open (allocated before the window). A backward pass needed a map of every address.
    std::vector<uint8_t> requested; // per allocation index: open, with a free_requested outstanding
    int64_t outstanding = 0;        // how many are set
    reserveHuge(requested, n / 2 + 16);
    AddressMap loose(64);
    // An alloc/free action at `addr`: an outstanding request there was completed.
    auto settleLoose = [&](uint64_t addr) {
        if (loose.size() > 0)
            loose.erase(addr);
    };
    for (size_t i = 0; i < n; ++i) {
        const int64_t size = ev.size[i];
        switch (ev.action[i]) {
        case TraceAction::FreeRequested: {
            const uint64_t addr = ev.addr[i];
            if (const uint32_t idx = open.find(addr); idx != AddressMap::kMissing) {
                if (requested[idx])
                    ++t.pendingFreeCount; // the earlier request was never completed
                else
                    ++outstanding;
                requested[idx] = 1;
            } else if (loose.size() > 0 && loose.find(addr) != AddressMap::kMissing) {
                ++t.pendingFreeCount;
            } else {
                loose.set(addr, 1);
            }
            break;
        }
        case TraceAction::Alloc: {
            settleLoose(ev.addr[i]);
            if (const uint32_t prev = open.find(ev.addr[i]); prev != AddressMap::kMissing) {
                // The address was reused without a recorded free (events lost): close the old one.
                Allocation& old = t.allocations[prev];
                old.end = static_cast<int64_t>(i);
                running -= old.size;
                outstanding -= requested[prev]; // a request there is completed by the re-alloc
                requested[prev] = 0;
            }
            open.set(ev.addr[i], static_cast<uint32_t>(t.allocations.size()));
            t.allocations.push_back({ev.addr[i], size, static_cast<int32_t>(i), int32_t(Allocation::kStillAlive), ev.stack[i]});
            requested.push_back(0);
            running += size;
            break;
        }
        case TraceAction::FreeCompleted:
        case TraceAction::Free: {
            settleLoose(ev.addr[i]);
            if (const uint32_t idx = open.find(ev.addr[i]); idx != AddressMap::kMissing) {
                Allocation& a = t.allocations[idx];
                a.end = static_cast<int64_t>(i);
                running -= a.size;
                outstanding -= requested[idx];
                requested[idx] = 0;
                open.erase(ev.addr[i]);
            } else {
                // Freed but never allocated in the window: alive since before it.
                initial += size;
                running -= size;
                t.allocations.push_back({ev.addr[i], size, int32_t(Allocation::kBeforeWindow), static_cast<int32_t>(i), ev.stack[i]});
                requested.push_back(0);
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
        t.allocated.push_back(running);
        t.reserved.push_back(reservedDelta);
    }

    // Still pending: the loose requests and the open allocations with a request outstanding.
    t.pendingFreeCount += static_cast<int64_t>(loose.size()) + outstanding;

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
        t.reserved = StepCurve();
        for (size_t i = 0; i < n; ++i)
            t.reserved.push_back(ev.totalReserved[i] - t.initialReserved);
    }
    t.reserved.offset(t.initialReserved);
    t.peakAllocated = initial;
    t.peakEventIndex = -1;
    t.peakReserved = std::max(t.initialReserved, t.reserved.max(t.initialReserved));
    for (size_t i = 0; i < n; ++i) {
        t.allocated[i] += initial;
        if (t.allocated[i] > t.peakAllocated) {
            t.peakAllocated = t.allocated[i];
            t.peakEventIndex = static_cast<int64_t>(i);
        }
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
