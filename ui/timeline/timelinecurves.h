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
    int64_t firstTimeUs = 0;
    double timeUnitUs = 1e6; ///< microseconds per x unit

    /// Whether the device has time_us (else the keys are event indices).
    bool hasTime() const { return m_times || !m_keys.empty(); }
    size_t keyCount() const { return m_times ? m_times->size() : m_keys.size(); }
    /// Event i's x key (i < keyCount()).
    double keyAt(size_t i) const { return m_times ? double((*m_times)[i] - firstTimeUs) / timeUnitUs : m_keys[i]; }
    /// The first event whose key is above `key` (std::upper_bound over the keys).
    size_t firstAbove(double key) const;
    /// The first event whose key is at or above `key` (std::lower_bound).
    size_t firstAtOrAbove(double key) const;

    /// Null pointers give empty curves.
    static std::shared_ptr<const TimelineCurves> compute(const DeviceData* device, const MemoryTimeline* timeline);
    /// One per device of the trace.
    static std::vector<std::shared_ptr<const TimelineCurves>> computeAll(const LoadedTrace& trace);

private:
    /// The device's own time_us when every event has one, in order: the keys are computed from
    /// it, not stored (8 bytes an event: 80 MB on a 10M-event trace). It belongs to the trace,
    /// which whoever holds these curves holds too (TimelineState, the load worker's result).
    const std::vector<int64_t>* m_times = nullptr;
    /// Otherwise: entries without a time, or out of order, keep the key before them, so the
    /// keys stay sorted (binary search, QCPGraph's alreadySorted).
    std::vector<double> m_keys;
};

} // namespace headroom
