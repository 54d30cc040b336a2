// SPDX-License-Identifier: MIT
#pragma once

// "One outlier batch, or one rank?" before the capacity levers (issue 27): the same line of
// code compared across the devices of one file. A line that allocates several times more on one
// device than on the others is an imbalance of the inputs (DataParallel's scatter, a bucketed
// sampler), and bounding the batch or fixing the split is cheaper than any lever.

#include "core/replay/loadedtrace.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace headroom {

struct LineImbalance {
    uint32_t frame = 0;    ///< the line's telling frame (FrameTable::topFrames)
    int device = 0;        ///< the device far above the others
    int64_t bytes = 0;     ///< its largest single allocation from the line
    int64_t median = 0;    ///< the median of the other devices' largest allocation from the line
    double ratio = 0;      ///< bytes / median
    std::vector<std::pair<int, int64_t>> perDevice; ///< (device, largest allocation), by device
};

/// The line whose largest allocation on device `deviceIndex` is at least 3x the median of the
/// other devices' and at least 5% of the device's allocated peak, the largest such excess;
/// nullopt with fewer than two devices that allocate from it.
std::optional<LineImbalance> findDeviceImbalance(const LoadedTrace& trace, size_t deviceIndex);

} // namespace headroom
