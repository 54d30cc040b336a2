// SPDX-License-Identifier: MIT
#pragma once

// The measured run's configuration as far as the file tells it: the recording helper's
// `headroom_config`, `key=value` text in annotations and `user_metadata`, the optimizer's
// `record_function` name. The calibration (core/whatif/calibration/whatifcalibration.h) adds what sizes and
// stacks tell, and the user states the rest.

#include "core/replay/loadedtrace.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Where values from the recording helper's `headroom_config` are said to come from.
inline constexpr const char* kRunConfigSource = "the file's headroom_config";

/// What the user states about the measured run (each optional).
struct StatedConfig {
    std::optional<int> microBatch, seq, devices, accum;
    std::optional<Precision> precision;
    std::optional<OptimizerKind> optimizer;
    std::optional<int> zero; ///< the sharding stage, where a framework's code in the stacks tells it
};

/// One value of the measured configuration and how it is known.
struct MeasuredItem {
    std::string key;    ///< micro_batch, seq, precision, devices, accum, optimizer, flash_attention, ...
    std::string value;  ///< "" when unknown
    std::string how;    ///< "read", "stated", "assumed", "unknown"
    std::string detail; ///< where it was read from
};

/// Reads the measured configuration from `headroom_config`, annotations and `user_metadata`
/// strings (`micro_batch=4`, `seq_len=1024`, `precision=bf16`, `world_size=8`, ...) and the
/// optimizer's `record_function` name. `how` receives where each value came from.
StatedConfig readTraceConfig(const LoadedTrace& trace, size_t deviceIndex, std::vector<MeasuredItem>* how = nullptr);

} // namespace headroom
