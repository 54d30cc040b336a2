// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocatorstate.h"
#include "core/replay/livesetindex.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <vector>

namespace headroom {

/// The allocator's segment and block layout at any event, as the official viewer's
/// "Allocator State History" shows it, without re-simulating the trace per query.
///
/// Built once per device: the segments' lifetimes (segment_alloc/free and map/unmap
/// events, plus the final segments reserved before the window), and for every allocation
/// the event of its free_requested (pending free until free_completed). A query takes the
/// live allocations from a LiveSetIndex (checkpoints), the live segments by a pass over the
/// (few) segments, and places each allocation in its segment by address.
class AllocatorHistory {
public:
    struct SegmentSpan {
        uint64_t address = 0;
        int64_t size = 0;
        int64_t stream = 0;
        int64_t start = Allocation::kBeforeWindow;
        int64_t end = Allocation::kStillAlive;
        bool largePool = true;
        bool expandable = false; ///< pages of an expandable segment (segment_map)
        std::pair<int64_t, int64_t> poolId{0, 0}; ///< a private pool's (CUDA graph, MemPool)
    };

    AllocatorHistory() = default;
    AllocatorHistory(const DeviceData& device, const MemoryTimeline& timeline);

    /// The state after `event` (-1: before the first event; clamped to the trace).
    /// `timeline` must be the one the history was built from.
    AllocatorState stateAt(const MemoryTimeline& timeline, int64_t event) const;

    const std::vector<SegmentSpan>& segmentSpans() const { return m_spans; }
    const LiveSetIndex& liveIndex() const { return m_live; }

private:
    std::vector<SegmentSpan> m_spans;
    std::vector<int64_t> m_pendingFrom; ///< per allocation: its free_requested event, or -1
    LiveSetIndex m_live;
    int64_t m_events = 0;
};

} // namespace headroom
