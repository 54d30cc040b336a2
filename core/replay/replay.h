// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"
#include "core/replay/stepcurve.h"

#include <cstdint>
#include <vector>

namespace headroom {

/// One allocation's lifetime in event indices of its device's trace.
struct Allocation {
    static constexpr int64_t kBeforeWindow = -1; ///< start: alive when the trace began
    static constexpr int64_t kStillAlive = -1;   ///< end: alive when the snapshot was taken

    /// The most events a device's trace may have: events are held as 32-bit indices here
    /// (32 bytes an allocation, not 40: a 10M-event trace holds 5M, docs/performance.md).
    static constexpr int64_t kMaxEvents = int64_t(INT32_MAX);

    uint64_t addr = 0;
    int64_t size = 0;
    int32_t start = int32_t(kBeforeWindow);
    int32_t end = int32_t(kStillAlive);
    uint32_t stack = 0;

    /// Alive after `event` (-1: before the first event): born by then, not yet freed.
    static bool alive(int64_t start, int64_t end, int64_t event)
    {
        return (start == kBeforeWindow || start <= event) && (end == kStillAlive || end > event);
    }
    bool aliveAfter(int64_t event) const { return alive(start, end, event); }
};

/// The replay of one device's trace (docs/formats.md, "How the peak is computed"), as PyTorch's viewer does it:
/// `free_completed` (merged with a preceding `free_requested`) ends an allocation, a lone
/// `free_requested` leaves it pending, frees without an alloc and `active_allocated`
/// blocks without an open alloc were alive since the start of the window.
struct MemoryTimeline {
    int device = 0;
    std::vector<int64_t> allocated; ///< allocated bytes after event i
    StepCurve reserved;             ///< reserved bytes after event i
    int64_t initialAllocated = 0;   ///< before event 0
    int64_t initialReserved = 0;
    int64_t peakAllocated = 0;
    int64_t peakEventIndex = -1;    ///< the alloc that first reached the peak; -1: the initial state
    int64_t peakReserved = 0;
    /// False where the file holds no caching allocator's segments to replay: the CPU recorder
    /// (real or fake) records tensors, not a GPU allocator's reservations, so `reserved` and
    /// `peakReserved` are not the run's (the allocator simulation is what stands in for them).
    bool reservedRecorded = true;
    std::vector<Allocation> allocations;
    int64_t initialAllocationCount = 0; ///< allocations alive since before the window
    int64_t ghostBlockCount = 0;        ///< of which only known from the final blocks
    int64_t pendingFreeCount = 0;       ///< free_requested never completed

    /// Allocated bytes just before `event` (what the process held when it was issued).
    int64_t allocatedBefore(int64_t event) const
    {
        return event > 0 && size_t(event) <= allocated.size() ? allocated[size_t(event - 1)] : initialAllocated;
    }

    /// Index of the event whose time is closest at or before `timeUs`; requires a timed trace.
    static int64_t eventAtTime(const TraceEvents& trace, int64_t timeUs);
};

MemoryTimeline replayDevice(const DeviceData& device);

} // namespace headroom
