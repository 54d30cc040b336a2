// SPDX-License-Identifier: MIT
#pragma once

// What the user set in the what-if, as JSON: saved in a trace's user data (.hrt), restored
// on reopening, quoted by the postmortem. One writer and one reader for the panel and the
// command line's configuration objects.

#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/ladder/whatifladder.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace headroom {

struct WhatIfSettings {
    LeverConfig config;
    /// > 0: config.microBatch is a ratio of the measured run (core/whatif/calibration/batchratio.h),
    /// written as `micro_batch_ratio` so that a count is never read from it.
    int microBatchUnits = 0;
    StatedConfig stated;          ///< the measured values the user gave
    int64_t capacityBytes = 0;
    std::optional<Currency> spendFirst;
    WhatIfConstants constants;    ///< written only where they differ from the defaults
};

/// The levers as JSON (`micro_batch`, `accum`, `effective_batch`, `seq`, `checkpoint`, ...).
nlohmann::json leverConfigJson(const LeverConfig& c);

/// The levers a user moved away from `from`, laid over `to`. A recalibration changes what the
/// run was measured at (a stated micro-batch lets the trace tell whether attention was fused):
/// the user's moves stay, every other lever follows the new reading.
LeverConfig rebasedLevers(const LeverConfig& edited, const LeverConfig& from, const LeverConfig& to);

/// `{"whatif": {levers..., capacity_bytes, measured_*, spend_first, constants}}`; a micro-batch
/// in ratios is `micro_batch_ratio` (1.0: as measured) in place of `micro_batch`.
nlohmann::json whatIfSettingsJson(const WhatIfSettings& s);

/// Reads what whatIfSettingsJson() wrote; absent or invalid fields keep `defaults`' values.
/// Nullopt when there is no `whatif` object.
std::optional<WhatIfSettings> whatIfSettingsFromJson(const nlohmann::json& j, const WhatIfSettings& defaults);

} // namespace headroom
