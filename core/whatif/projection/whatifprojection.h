// SPDX-License-Identifier: MIT
#pragma once

// The projection engine (docs/whatif-model.md): a WhatIfState holds the memory terms
// of one training configuration; levers (core/whatif/terms/whatiflevers.h) turn one state into another;
// evaluate() assembles the three phase peaks, the band, the verdict and the step time.

#include "core/whatif/vocabulary/whatifstate.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

/// Analytic mode: the terms of `dims` trained at `config`, on one device with no
/// sharding, offload, checkpointing or freezing; project() applies those levers.
WhatIfBaseline analyticBaseline(const ModelDims& dims, const LeverConfig& config, const WhatIfConstants& k = {});

/// Applies every lever of `target` to `base` in a fixed order (precision, optimizer, LoRA,
/// shape, FlashAttention, checkpointing, sharding, offload, allocator) and evaluates.
Projection project(const WhatIfBaseline& base, const LeverConfig& target, const WhatIfConstants& k,
                   const DeviceSpec& device);

/// The phases, band and verdict of a state; `base` is the baseline for the step-time ratio.
Projection evaluate(const WhatIfState& state, const WhatIfBaseline& base, const WhatIfConstants& k,
                    const DeviceSpec& device);

/// Saved activations at the start of backward after checkpointing and FlashAttention.
double storedActivations(const WhatIfState& s, double* lin = nullptr, double* quad = nullptr);

/// The step-time model for a state, calibrated to the baseline's measured time when known.
StepTime stepTime(const WhatIfState& s, const WhatIfBaseline& base, const WhatIfConstants& k, const DeviceSpec& device);

} // namespace headroom
