// SPDX-License-Identifier: MIT
#pragma once

#include "core/memoryanalysis.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// One diagnosis: what kind of problem, the verdict, the evidence in numbers, and the
/// first move to try.
struct Finding {
    std::string kind; ///< capacity, leak, fragmentation, outlier_batch, oom
    std::string verdict;
    std::string evidence;
    std::string firstMove;
};

/// Where the device capacity came from.
struct CapacityEstimate {
    int64_t bytes = 0; ///< 0: unknown
    std::string source; ///< "user", "OOM (reserved + device free)", "unknown"
};

CapacityEstimate estimateCapacity(const LoadedTrace& trace, size_t deviceIndex, std::optional<int64_t> userCapacity);

/// Decides between capacity, leak, fragmentation and outlier batch, and explains an OOM.
std::vector<Finding> diagnose(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                              const CapacityEstimate& capacity);

} // namespace headroom
