// SPDX-License-Identifier: MIT
#pragma once

// How far the step had got when the OOM stopped it (issue 27). What was alive at the OOM plus
// the failing request is a lower bound of the step's need, not the need: an OOM halfway through
// the forward misses by far more than the request. Where the file holds the same phase complete
// (an earlier iteration of this device, or another device), the progress through it is counted
// by the calls of the phase's most repeated line, and the whole step's need is estimated from
// the reference's rest of the step: added as it was (low) or scaled by how much more this
// device held at the same point (high).

#include "core/analysis/memoryanalysis.h"

#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

struct OomProgress {
    Phase phase = Phase::Other; ///< the phase the OOM stopped
    int64_t lowerBound = 0;     ///< allocated just before the failing request + the request
    uint32_t line = 0;          ///< the telling frame counted (0: none)
    int64_t done = 0;           ///< its allocations in the stopped phase before the OOM
    int64_t of = 0;             ///< the same in the reference's complete phase (0: no reference)
    std::string reference;      ///< "device 0" or "iteration 1" (empty: none)
    int64_t estimateLow = 0;    ///< the whole step's need (0: no estimate)
    int64_t estimateHigh = 0;
};

/// Nullopt when the device has no OOM record.
std::optional<OomProgress> oomProgress(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis);

} // namespace headroom
