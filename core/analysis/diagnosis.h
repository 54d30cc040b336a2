// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/finding.h"
#include "core/analysis/memoryanalysis.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Where the device capacity came from.
struct CapacityEstimate {
    int64_t bytes = 0; ///< 0: unknown
    std::string source; ///< "user", "OOM (reserved + device free)", "unknown"
};

/// A caching-allocator setting as the snapshot shows it.
enum class SettingState { Off, On, Unknown };
const char* settingStateName(SettingState s); ///< "off", "on", "unknown"

/// expandable_segments: on when `allocator_settings` (the key, or PYTORCH_CUDA_ALLOC_CONF),
/// a segment's is_expandable or a segment_map event says so; off only when the settings
/// say so; unknown when the file says nothing (older PyTorch, no expandable segment left).
SettingState expandableSegments(const Snapshot& snapshot, const DeviceData& device);

/// The allocator state fragmentation is judged on. The end of a trace usually holds a step's
/// freed activations in the cache (reusable, not fragmentation) or, after an OOM was caught,
/// nothing at all; what matters is the cache when memory was scarce: just before the first
/// OOM's failing request, else at the allocated peak. Only a file without allocation history
/// is judged on its final state.
struct FragmentationJudgement {
    std::string moment;      ///< "oom", "peak" or "end"
    int64_t eventIndex = -1; ///< the state after this event (-1: before the first)
    int64_t reserved = 0;
    int64_t allocated = 0;      ///< requested bytes of live allocations
    int64_t inactiveBytes = 0;  ///< cached free
    int64_t inactiveBlocks = 0;
    int64_t largestFreeBlock = 0; ///< contiguous free runs merged across mapped ranges when expandable
    int64_t internalBytes = 0;    ///< rounding
    int64_t request = 0;          ///< the failing request (OOM only)
    int64_t deviceFree = 0;       ///< the device's free memory at the OOM
    int64_t unusableForRequest = 0; ///< cached free bytes in blocks too small for the request
    double unallocatedShare = 0;  ///< inactiveBytes / reserved
    SettingState expandable = SettingState::Unknown;
};

FragmentationJudgement judgeFragmentation(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis);

CapacityEstimate estimateCapacity(const LoadedTrace& trace, size_t deviceIndex, std::optional<int64_t> userCapacity);

/// Decides between capacity, leak, fragmentation and outlier batch, and explains an OOM.
std::vector<Finding> diagnose(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                              const CapacityEstimate& capacity);

} // namespace headroom
