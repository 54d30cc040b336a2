// SPDX-License-Identifier: MIT
#pragma once

// "One outlier batch, or one rank?" before the capacity levers (issue 27): the same line of
// code compared across the devices of one file. A line that allocates several times more on one
// device than on the others is an imbalance of the inputs (DataParallel's scatter, a bucketed
// sampler), and bounding the batch or fixing the split is cheaper than any lever.

#include "core/analysis/phaseclassifier.h"
#include "core/replay/loadedtrace.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace headroom {

/// One line's largest single allocation in one place (a device, or an iteration of one device)
/// against the others.
struct LineImbalance {
    uint32_t frame = 0;    ///< the line's telling frame (FrameTable::topFrames)
    int index = 0;         ///< the device ordinal (or the iteration) far above the others
    int64_t bytes = 0;     ///< its largest single allocation from the line
    int64_t median = 0;    ///< the median of the others' largest allocation from the line
    double ratio = 0;      ///< bytes / median
    std::vector<std::pair<int, int64_t>> perIndex; ///< (device or iteration, largest allocation)
};

/// The line whose largest allocation on device `deviceIndex` is at least 3x the median of the
/// other devices' and at least 5% of the device's allocated peak, the largest such excess;
/// nullopt with fewer than two devices that allocate from it.
std::optional<LineImbalance> findDeviceImbalance(const LoadedTrace& trace, size_t deviceIndex);

/// The same across the iterations of one device: the line whose largest allocation in
/// `iteration` is at least 3x the median of the other iterations' (the evidence of an outlier
/// batch: which code's tensors grew with it).
std::optional<LineImbalance> findIterationOutlierLine(const FrameTable& frames, const TraceEvents& events,
                                                      const std::vector<Iteration>& iterations, int iteration,
                                                      int64_t peak);

} // namespace headroom
