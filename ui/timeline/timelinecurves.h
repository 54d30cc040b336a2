// SPDX-License-Identifier: MIT
#pragma once

#include "core/util/minmaxpyramid.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace headroom {

struct DeviceData;
struct LoadedTrace;
struct MemoryTimeline;

/// What the timeline needs to draw a device's raw curves quickly: the x keys of the
/// events (time since the first event, in s, ms or µs) and min/max pyramids of the
/// allocated and reserved curves. Pure computation, so the load worker prepares it for
/// every device and the GUI thread only adopts it.
struct TimelineCurves {
    MinMaxPyramid allocated, reserved;
    std::vector<double> timeKeys; ///< empty when the device has no time_us
    int64_t firstTimeUs = 0;
    double timeUnitUs = 1e6; ///< microseconds per x unit

    /// Null pointers give empty curves.
    static std::shared_ptr<const TimelineCurves> compute(const DeviceData* device, const MemoryTimeline* timeline);
    /// One per device of the trace.
    static std::vector<std::shared_ptr<const TimelineCurves>> computeAll(const LoadedTrace& trace);
};

} // namespace headroom
