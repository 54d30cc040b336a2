// SPDX-License-Identifier: MIT
#pragma once
// The calibration's third stage (docs/whatif-model.md, "The terms"): the measured
// configuration, each value stated over read, and read from the file where it can be.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/calibration/calibrationpoints.h"
#include "core/whatif/calibration/measuredsettler.h"
#include "core/whatif/calibration/precisionevidence.h"
#include "core/whatif/calibration/traceconfig.h"

#include <optional>
#include <vector>

namespace headroom {

/// The measured values the levers start from, each settled (stated over read).
struct SettledConfig {
    std::optional<int> microBatch, seq, devices, accum, zero;
    std::optional<Precision> precision;
};

/// Stage 3: micro-batch and sequence (annotations, else the activations' sizes when the
/// model's width is known), precision (the recorder's record, else what the stacks show;
/// never assumed: an unknown one is projected under each open reading), devices, and the
/// accumulation steps (the backward passes per optimizer step).
SettledConfig settleConfiguration(MeasuredSettler& settler, const StatedConfig& read, const StatedConfig& stated,
                                  const ModelDims& dims, const LivePoint& L1, int backwardSpans,
                                  const PrecisionEvidence& pEvidence);

/// The device count from the framework's buffers (worldsize.h) where nothing recorded says it,
/// weighed at the precisions still open.
void readDevices(StatedConfig& read, std::vector<MeasuredItem>& readHow, const LoadedTrace& trace, size_t deviceIndex,
                 const DeviceAnalysis& a, const StatedConfig& stated, const PrecisionEvidence& pEvidence);

} // namespace headroom
