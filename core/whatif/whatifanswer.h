// SPDX-License-Identifier: MIT
#pragma once

// The what-if's answer for one target, assembled once for every frontend (the CLI's whatif and
// MCP, the panel): the projection, the caching allocator's simulation of its requests, the whole
// step where the OOM cut the calibrated one short, and the breakdown at its peak.

#include "core/replay/allocatorsimconfig.h"
#include "core/whatif/cutstep.h"
#include "core/whatif/whatifprojection.h"

#include <optional>

namespace headroom {

struct WhatIfContext {
    /// The file's allocator settings: the projected run's requests are simulated under them
    /// (the verdict is the simulation's). Nullopt: not simulated (the terms' verdict).
    std::optional<AllocatorConfig> recordedAllocator;
    std::optional<CutStep> cutStep; ///< Calibration::cutStep
};

Projection answerWhatIf(const WhatIfBaseline& base, const LeverConfig& target, const WhatIfConstants& k,
                        const DeviceSpec& device, const WhatIfContext& context);

} // namespace headroom
