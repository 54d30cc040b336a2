// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/frametable.h"
#include "core/model/tensorcategory.h"
#include "core/replay/replay.h"

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace headroom {

struct AllocationClass;

/// Live bytes per group (tensor category, or any grouping the caller passes) after any
/// event, for drawing stacked areas. Built once per device from the allocations'
/// lifetimes as a sorted list of +size/-size steps with a checkpoint of every group's
/// total each kCheckpoint steps, so the values at the few thousand events a chart
/// samples cost one sweep over the visible steps, not a pass over all allocations.
class GroupedSeries {
public:
    static constexpr size_t kGroups = kTensorCategoryCount;
    using Values = std::array<int64_t, kGroups>;

    GroupedSeries() = default;
    /// `groupOf(i)` gives allocation i's group (< kGroups); a negative group leaves it out.
    GroupedSeries(const MemoryTimeline& timeline, const std::function<int(size_t)>& groupOf);

    /// Values after each of `events` (ascending; -1 is the state before event 0).
    std::vector<Values> valuesAt(const std::vector<int64_t>& events) const;
    Values valueAt(int64_t event) const;
    const Values& initial() const { return m_initial; }
    bool empty() const { return m_steps.empty() && m_initialTotal == 0; }

private:
    static constexpr size_t kCheckpoint = 4096;
    static constexpr size_t kBlock = 64;
    static constexpr uint8_t kNoGroup = 0xff;
    /// How many steps happen at or before `event`.
    size_t stepsUpTo(int64_t event) const;
    void apply(int64_t step, Values& v) const { v[size_t(step & 0xff)] += step >> 8; }
    /// Fills m_count and m_blockBefore from each event's groups; returns where each event's
    /// steps begin (and, last, how many there are) for the placing.
    std::vector<uint32_t> countSteps(const std::vector<uint16_t>& marks);

    Values m_initial{};
    int64_t m_initialTotal = 0;
    /// Each event's steps (one per group it moves) and the steps before every block of kBlock
    /// events: with them a step needs no event of its own, and an event 1 byte rather than 4
    /// (8 bytes a step, not 24; a 10M-event trace has about as many steps, docs/performance.md).
    std::vector<uint8_t> m_count;
    std::vector<uint32_t> m_blockBefore;
    std::vector<int64_t> m_steps;      ///< delta << 8 | group, by event
    std::vector<Values> m_checkpoints; ///< values before step k * kCheckpoint
};

/// Grouped by tensor category (AllocationClass::category).
GroupedSeries categorySeries(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes);

/// Live bytes after every event of the allocations `selected(i)` accepts (a stack filter,
/// a search), one value per event: the curve highlighted under the stacked areas.
std::vector<int64_t> filteredLiveBytes(const MemoryTimeline& timeline, size_t eventCount,
                                       const std::function<bool(size_t)>& selected);

/// Whether a stack's non-noise frames, outermost first, begin with `path` (the stack
/// tree's paths: DeviceAnalysis::stackTreeAt). An empty path matches every stack.
/// The frames the stack views show, outermost first: never the interpreter's and the
/// allocator's noise (FrameTable::isNoiseFrame); with `pythonOnly`, only the Python frames of
/// a stack that has any (a stack of C++ frames alone keeps them).
std::vector<uint32_t> shownFrames(const FrameTable& frames, uint32_t stack, bool pythonOnly);
/// Whether the stack's shown frames start with `path`.
bool stackStartsWith(const FrameTable& frames, uint32_t stack, const std::vector<uint32_t>& path,
                     bool pythonOnly = false);

/// Allocations born in [first, last] (events, inclusive), indices in birth order.
std::vector<size_t> bornInRange(const MemoryTimeline& timeline, int64_t first, int64_t last);

/// The event in [first, last] with the most allocated bytes (the first one on ties).
int64_t maxEventInRange(const MemoryTimeline& timeline, int64_t first, int64_t last);

} // namespace headroom
