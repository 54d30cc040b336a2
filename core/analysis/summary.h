// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/loadedtrace.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

/// How many of the failing request's frames every report shows (FrameTable::topFrames: the
/// user's Python frames first).
inline constexpr size_t kOomFrameLines = 8;

/// A device's OOM records: `event_index`, `size`, `device_free` and the failing request's
/// `frames` (summary's `oom`, analyze's `failing_requests`).
nlohmann::json oomRecordsJson(const Snapshot& snapshot, const DeviceData& device);

/// The `headroom-cli summary` report: per device, the final allocator state and the
/// replayed peak. JSON keys are a stable contract (see README).
nlohmann::json summaryJson(const LoadedTrace& trace);
/// Each private pool of a device (privatePoolSummaries) as summary and analyze --json list it.
nlohmann::json privatePoolsJson(const DeviceData& device, const MemoryTimeline& timeline);
std::string summaryText(const LoadedTrace& trace);
/// The device a postmortem starts on (an index into snapshot.devices): the one with an OOM
/// record, else the one with the highest allocated peak, else the first with a history;
/// -1 when the trace has no device.
int primaryDeviceIndex(const LoadedTrace& trace);

} // namespace headroom
