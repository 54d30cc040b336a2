// SPDX-License-Identifier: MIT
#pragma once

// Calibrated mode (docs/whatif-model.md, "The terms"): decompose a measured trace into the projection's terms at
// the configuration it was measured at. What the trace tells is read; the rest the user states.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/calibration/cutstep.h"
#include "core/whatif/calibration/traceconfig.h"
#include "core/whatif/projection/whatifprojection.h"

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

struct Calibration {
    WhatIfBaseline baseline;
    std::vector<MeasuredItem> measured;
    int iteration = -1;
    std::array<int64_t, kStepPhaseCount> events{-1, -1, -1}; ///< the measured points
    double measuredPeak = 0; ///< allocated peak of the chosen iteration
    bool outlierBatch = false;
    /// This device allocates far more than the others from the same line (deviceimbalance.h):
    /// its inputs are larger, so a batch budget comes before any capacity lever.
    bool outlierDevice = false;
    /// The calibrated iteration is the one an OOM cut short: its projections are of part of a
    /// step, and the ladder starts from the whole step's band (cutstep.h).
    std::optional<CutStep> cutStep;
    /// The file's optimizer state breaks an invariant (analysis/categorychecks.h): the
    /// ladder leaves out the levers that shrink it.
    bool optimizerStateSuspect = false;
    bool firstStep = false;

    const MeasuredItem* item(std::string_view key) const;
    bool known(std::string_view key) const;
    /// Throws WhatIfMissingValue when `target` moves a lever whose measured value is unknown
    /// (a micro-batch counted in ratios, batchratio.h, moves).
    void require(const LeverConfig& target) const;
    /// What require() would throw for `target`; nullopt when the trace answers it. `from`: the
    /// levers count as moved from this configuration (the ladder's start, which was answered),
    /// not from the measured one.
    std::optional<WhatIfMissingValue> missing(const LeverConfig& target, const LeverConfig* from = nullptr) const;
};

/// Builds the baseline from a steady-state iteration of the device. `dims` (optional, may be
/// invalid) supplies layers / hidden / heads when known.
Calibration calibrate(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                      const StatedConfig& stated, const ModelDims& dims = {}, const WhatIfConstants& k = {});

} // namespace headroom
