// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/categoryclassifier.h"
#include "core/analysis/phaseclassifier.h"
#include "core/analysis/prerecording.h"
#include "core/analysis/timelinebands.h"
#include "core/replay/allocatorhistory.h"
#include "core/replay/loadedtrace.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <functional>
#include <vector>

namespace headroom {

/// Live bytes split by category, by phase of birth, and by both.
struct Breakdown {
    std::array<int64_t, kTensorCategoryCount> byCategory{};
    std::array<int64_t, kPhaseCount> byPhase{};
    std::array<std::array<int64_t, kPhaseCount>, kTensorCategoryCount> matrix{};
    int64_t total = 0;
    int64_t count = 0;
};

struct IterationPeak {
    int iteration = 0;
    int64_t startEvent = 0, endEvent = 0;
    int64_t peakBytes = 0;
    int64_t peakEvent = -1;
    int64_t endBytes = 0; ///< allocated after the iteration's last event (the baseline)
};

/// One node of the live-memory stack tree (a flame/icicle graph), outermost frame at the root.
struct StackNode {
    uint32_t frame = 0;  ///< FrameTable frame id (unused for the root)
    int32_t parent = -1; ///< index into the node list; -1 for the root
    int64_t bytes = 0;   ///< inclusive
    int64_t count = 0;
};

/// The allocator's final state (the state at the OOM when the snapshot was taken there).
struct Fragmentation {
    int64_t reserved = 0, allocated = 0, requested = 0;
    int64_t internalBytes = 0;    ///< rounding: size - requested of allocated blocks
    int64_t inactiveBytes = 0;    ///< cached free blocks (external fragmentation when unusable)
    int64_t pendingFreeBytes = 0;
    int64_t largestFreeBlock = 0;
    int64_t inactiveBlocks = 0;
};

/// Everything computed about one device: phases, categories, the peak's anatomy.
/// Queries at any event start from the nearest checkpoint of the live set (LiveSetIndex)
/// and cost O(live + 4096), not a pass over every allocation and never a re-simulation.
struct DeviceAnalysis {
    int device = 0;
    PhaseAnalysis phases;
    std::vector<AllocationClass> classes; ///< parallel to MemoryTimeline::allocations
    PreRecording preRecording;            ///< what the memory from before the trace was
    std::vector<IterationPeak> iterationPeaks;
    Breakdown atPeak;
    Breakdown atEnd;
    std::vector<size_t> topAtPeak; ///< allocation indices, largest first
    Fragmentation fragmentation;
    AllocatorHistory allocator; ///< segments and blocks at any event
    /// Live bytes by category at any event (the timeline's stacked areas): built only when
    /// asked (AnalysisOptions::categorySeries), the command line never draws them.
    GroupedSeries categories;

    Breakdown breakdownAt(const MemoryTimeline& timeline, int64_t event) const;
    /// Allocation indices alive after `event` (-1: before the first event).
    std::vector<size_t> liveAt(const MemoryTimeline& timeline, int64_t event) const;
    std::vector<size_t> largestAt(const MemoryTimeline& timeline, int64_t event, size_t count) const;
    /// The icicle of what is alive after `event`, by the frames shownFrames() keeps; with
    /// `keep`, of the allocations it accepts (a module filter).
    std::vector<StackNode> stackTreeAt(const MemoryTimeline& timeline, const FrameTable& frames, int64_t event,
                                       bool pythonOnly = false,
                                       const std::function<bool(size_t)>& keep = nullptr) const;
};

struct AnalysisOptions {
    const std::atomic<bool>* cancel = nullptr; ///< set: analyzeDevice throws LoadCancelled
    bool categorySeries = false;               ///< also build DeviceAnalysis::categories
};

/// Uses two threads: the allocator history (the live-set index) is built beside the phases,
/// the categories and their series, which it does not depend on.
DeviceAnalysis analyzeDevice(const LoadedTrace& trace, size_t deviceIndex, const AnalysisOptions& options = {});

} // namespace headroom
