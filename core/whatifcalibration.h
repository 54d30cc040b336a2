// SPDX-License-Identifier: MIT
#pragma once

// Calibrated mode (WHATIF.md §3): decompose a measured trace into the projection's terms at
// the configuration it was measured at. What the trace tells is read; the rest the user states.

#include "core/loader.h"
#include "core/memoryanalysis.h"
#include "core/whatifprojection.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace headroom {

/// A value the calibration needs and neither the trace nor the user gave.
class WhatIfMissingValue : public std::runtime_error {
public:
    WhatIfMissingValue(std::string key, std::string flag, const std::string& message)
        : std::runtime_error(message), key(std::move(key)), flag(std::move(flag)) {}
    std::string key;  ///< "micro_batch"
    std::string flag; ///< "--measured-micro-batch"
};

/// What the user states about the measured run (each optional).
struct StatedConfig {
    std::optional<int> microBatch, seq, devices, accum;
    std::optional<Precision> precision;
    std::optional<OptimizerKind> optimizer;
};

/// One value of the measured configuration and how it is known.
struct MeasuredItem {
    std::string key;    ///< micro_batch, seq, precision, devices, accum, optimizer, flash_attention, ...
    std::string value;  ///< "" when unknown
    std::string how;    ///< "read", "stated", "assumed", "unknown"
    std::string detail; ///< where it was read from
};

struct Calibration {
    WhatIfBaseline baseline;
    std::vector<MeasuredItem> measured;
    int iteration = -1;
    std::array<int64_t, kStepPhaseCount> events{-1, -1, -1}; ///< the measured points
    double measuredPeak = 0; ///< allocated peak of the chosen iteration
    bool outlierBatch = false;
    bool firstStep = false;

    const MeasuredItem* item(std::string_view key) const;
    bool known(std::string_view key) const;
    /// Throws WhatIfMissingValue when `target` moves a lever whose measured value is unknown.
    void require(const LeverConfig& target) const;
};

/// Reads the measured configuration from annotations and `user_metadata` strings
/// (`micro_batch=4`, `seq_len=1024`, `precision=bf16`, `world_size=8`, ...), the optimizer's
/// `record_function` name, and (with `dims`) tensor sizes: an activation of b*s*h elements,
/// attention scores of b*a*s^2.
StatedConfig readTraceConfig(const LoadedTrace& trace, size_t deviceIndex, std::vector<MeasuredItem>* how = nullptr);

/// Builds the baseline from a steady-state iteration of the device. `dims` (optional, may be
/// invalid) supplies layers / hidden / heads when known.
Calibration calibrate(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                      const StatedConfig& stated, const ModelDims& dims = {}, const WhatIfConstants& k = {});

} // namespace headroom
