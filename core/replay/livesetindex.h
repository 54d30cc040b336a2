// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/replay.h"

#include <cstdint>
#include <vector>

namespace headroom {

/// Which allocations are alive after any event, without a pass over every allocation.
///
/// The build sweeps the events once and stores checkpoints: the live set before event
/// p_k, with p_{k+1} = p_k + max(kMinSpacing, |live set at p_k|). A checkpoint is never
/// larger than the distance to the next one, so all of them together hold at most about
/// (events + allocations) indices. A query copies the nearest checkpoint at or before the
/// event and applies the births and deaths between it and the event (two sorted ranges),
/// so it costs O(live + spacing) instead of O(all allocations): stepping through a
/// million-event trace stays interactive.
class LiveSetIndex {
public:
    static constexpr int64_t kMinSpacing = 4096;

    LiveSetIndex() = default;
    explicit LiveSetIndex(const MemoryTimeline& timeline);

    /// Indices into timeline.allocations alive after `event` (-1: before the first
    /// event), ascending. Same result as testing every allocation's [start, end).
    /// `timeline` must be the one the index was built from.
    std::vector<uint32_t> liveAfter(const MemoryTimeline& timeline, int64_t event) const;

    size_t checkpointCount() const { return m_positions.size(); }
    size_t storedIndices() const { return m_members.size(); }

private:
    int64_t m_events = 0;
    std::vector<uint32_t> m_byStart;   ///< allocations born in the window, by start event
    std::vector<uint32_t> m_byEnd;     ///< allocations that die in the window, by end event
    std::vector<int64_t> m_positions;  ///< checkpoint k holds the set alive before event m_positions[k]
    std::vector<size_t> m_offsets;     ///< checkpoint k = m_members[m_offsets[k], m_offsets[k+1])
    std::vector<uint32_t> m_members;
};

} // namespace headroom
