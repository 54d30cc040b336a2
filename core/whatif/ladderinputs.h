// SPDX-License-Identifier: MIT
#pragma once

// What a file gives the ladder, assembled once: the CLI's `ladder`, MCP, the what-if panel and
// the diagnosis's first move (DeviceReport) all build their ladder from these, so the same file
// at the same capacity gets the same rungs everywhere (issue 45: three frontends had three
// first moves for one OOM, because each read the outlier batch, the allocator replay and the
// unknown micro-batch its own way).

#include "core/replay/loadedtrace.h"
#include "core/whatif/allocatorverdict.h"
#include "core/whatif/whatifcalibration.h"
#include "core/whatif/whatifladder.h"

#include <optional>

namespace headroom {

/// The calibration every ladder runs on: an unknown measured micro-batch moves in ratios of the
/// measured run (batchratio.h), so "micro-batch x1/2" is priced wherever the panel prices it.
Calibration ladderCalibration(const Calibration& cal);

/// The ladder's options from the file: the outlier batch or device (the calibration read both), the optimizer-state invariant, the allocator replay's
/// setting (`verdict`: the replay for the ladder's capacity, or none), the file's allocator
/// settings to simulate under, and `cal` for what the trace cannot answer. `cal` must outlive
/// the options.
LadderOptions ladderOptionsFor(const LoadedTrace& trace, const Calibration& cal,
                               const std::optional<AllocatorVerdict>& verdict);

} // namespace headroom
