// SPDX-License-Identifier: MIT
#pragma once

// Levers as pure functions WhatIfState -> WhatIfState (docs/whatif-model.md, "The terms"). Each sets its part
// of `config`, re-prices or rescales the terms it touches, and marks provenance and uncertainty.
// The step-time effect follows from the config in stepTime().

#include "core/whatif/vocabulary/whatifstate.h"

namespace headroom::levers {

WhatIfState withPrecision(WhatIfState s, Precision p);
WhatIfState withOptimizer(WhatIfState s, OptimizerKind o);
WhatIfState withTrainableFraction(WhatIfState s, double fraction);
/// Micro-batch, accumulation and sequence length: activations and batch temporaries scale
/// with b*s (linear part) and b*s^2 (attention scores).
WhatIfState withShape(WhatIfState s, int microBatch, int accum, int seq);
WhatIfState withFlashAttention(WhatIfState s, bool on);
WhatIfState withCheckpointing(WhatIfState s, Checkpointing c, int everyK);
WhatIfState withSharding(WhatIfState s, int zero, int devices);
WhatIfState withOffload(WhatIfState s, Offload o, const WhatIfConstants& k);
WhatIfState withExpandableSegments(WhatIfState s, bool on, const WhatIfConstants& k);

/// All of the above in the fixed order project() uses.
WhatIfState applyAll(const WhatIfState& base, const LeverConfig& target, const WhatIfConstants& k);

} // namespace headroom::levers
