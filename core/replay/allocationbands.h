// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/replay.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// One allocation's band in one column: it occupies [bottom, bottom + size) bytes.
struct BandSlice {
    uint32_t allocation = 0; ///< index into MemoryTimeline::allocations
    int64_t bottom = 0;
};

/// The by-allocation timeline for a set of pixel columns: at each column's event the
/// allocations drawn as their own band, stacked in order of birth above the merged band of
/// the small ones, as PyTorch's Active Memory Timeline stacks them (docs/formats.md, "Active memory bands").
struct BandColumns {
    std::vector<int64_t> events;   ///< the event each column shows (-1: before the first)
    std::vector<int64_t> small;    ///< bytes of the merged small allocations (at the bottom)
    std::vector<int64_t> total;    ///< allocated bytes after the event (the curve)
    std::vector<uint32_t> offsets; ///< column c holds slices [offsets[c], offsets[c + 1])
    std::vector<BandSlice> slices; ///< by bottom within a column

    size_t columns() const { return events.size(); }
    /// The band holding `bytes` (a y value) in column c; nullptr for the small band or above.
    const BandSlice* sliceAt(const MemoryTimeline& timeline, size_t column, int64_t bytes) const;
};

/// Chooses the allocations that get their own band (the `maxBands` largest of the run; the
/// detail control) and lays them out for any set of columns without re-simulating: one
/// sweep over those allocations' births and deaths between the columns' events.
class AllocationBands {
public:
    AllocationBands() = default;
    AllocationBands(const MemoryTimeline& timeline, size_t maxBands);

    size_t bandCount() const { return m_byStart.size(); }
    /// Allocations smaller than this are merged into the bottom band.
    int64_t threshold() const { return m_threshold; }

    /// `bounds` has columns + 1 event indices, non-decreasing: column c covers the events
    /// [bounds[c], bounds[c + 1]). Each column shows the event of its bucket where the
    /// allocated curve is highest (the peak is never lost), or, for a column without
    /// events, the state the curve holds there (the event before it).
    BandColumns layout(const MemoryTimeline& timeline, const std::vector<int64_t>& bounds) const;

private:
    std::vector<uint32_t> m_byStart; ///< band allocations by (start, index): the stacking order
    std::vector<uint32_t> m_byEnd;   ///< band allocations that die, by end
    int64_t m_threshold = 0;
};

} // namespace headroom
