// SPDX-License-Identifier: MIT
#pragma once

// Invariants the categories of a training step must keep, checked on every file (issue 27).
// The categories come from stacks and lifetimes; when one reading breaks what any optimizer
// or autograd does, the reading is wrong, not the run, and a lever built on it (8-bit Adam
// for "optimizer state") must not be the first move.

#include "core/analysis/memoryanalysis.h"

#include <cstdint>
#include <vector>

namespace headroom {

struct CategoryInvariant {
    enum class Kind : uint8_t { OptimizerStateRatio, GradientRatio, BreakdownTotal };
    Kind kind = Kind::OptimizerStateRatio;
    int64_t bytes = 0;     ///< the category's bytes (or the breakdown's total)
    int64_t reference = 0; ///< the parameters' bytes (or the allocated curve)
    double ratio = 0;      ///< bytes / reference
    double limit = 0;      ///< the most any optimizer or loop makes it
    int64_t event = -1;    ///< the moment checked (-1: the end of the trace)
};

/// Optimizer state is 0-3x the parameters (SGD none, momentum 1x, Adam 2x, an fp32 master
/// copy with Adam 3x); gradients are at most 2x (fp32 gradients of bf16 parameters, one
/// accumulation buffer); the categories of the live set add up to the allocated curve. Checked
/// at the peak and at the end; returns only the broken ones.
std::vector<CategoryInvariant> brokenCategoryInvariants(const MemoryTimeline& timeline, const DeviceAnalysis& analysis);

/// True when a broken invariant concerns optimizer state: the levers that shrink it have no
/// premise and go behind the others.
bool optimizerStateSuspect(const std::vector<CategoryInvariant>& broken);

} // namespace headroom
