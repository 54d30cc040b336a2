// SPDX-License-Identifier: MIT
#pragma once

// Gradient accumulation as a transformation of the measured history (docs/whatif-model.md,
// "Accumulation"). Measured at one micro-step per optimizer step with the gradients freed at
// zero_grad (set_to_none), the iteration's forward runs with no gradient alive and its backward
// makes each one. From the second micro-step on, every gradient is alive from the forward's start,
// and what the backward makes is the incoming gradient, added into .grad and freed.

#include "core/analysis/categoryclassifier.h"
#include "core/analysis/phaseclassifier.h"
#include "core/replay/replay.h"
#include "core/whatif/replay/checkpointplan.h"

#include <cstdint>
#include <vector>

namespace headroom {

struct AccumulationPlan {
    /// The moves that turn the iteration into a later micro-step: each gradient made again at
    /// the forward's start, and freed once more the event after its recorded birth.
    std::vector<CheckpointPlan::Move> moves; ///< by event
    int64_t forwardStart = -1;
    int64_t gradients = 0, gradientBytes = 0;
    bool empty() const { return moves.empty(); }
};

/// The plan for iteration `it`: the gradients its backward made that outlive the backward.
/// Empty when there are none (gradients kept from before: accumulation then changes nothing the
/// trace does not already show), or the iteration has no forward or backward.
AccumulationPlan planAccumulation(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                  const PhaseAnalysis& phases, const Iteration& it);

} // namespace headroom
