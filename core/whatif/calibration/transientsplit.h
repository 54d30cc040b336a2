// SPDX-License-Identifier: MIT
#pragma once
// The calibration's fifth stage (docs/whatif-model.md, "The terms"): the activations and
// temporaries alive at the start of backward, split into the terms the levers scale.

#include "core/whatif/calibration/calibrationpoints.h"
#include "core/whatif/calibration/scoresautocast.h"
#include "core/whatif/laws/allocationlaw.h"

namespace headroom {

/// Bytes at the reading, by term.
struct TransientSplit {
    double linear = 0;        ///< activations that grow with b*s
    double quadratic = 0;     ///< attention scores (b*a*s^2), by their allocation's law
    double autocastCache = 0; ///< autocast's casts of fp32 weights saved for backward
    double batchTemps = 0;    ///< temporaries with a token dimension
    double constTemps = 0;    ///< workspaces, scalars, state outside torch.optim
    double small = 0;         ///< activations in the allocator's smallest block
    double gathers = 0;       ///< layers' parameters FSDP or ZeRO-3 gathered: the layer's size
    double kvCache = 0, engineWeights = 0; ///< an inference engine's own memory, constant
    double batchGradTemps = 0; ///< of batchTemps, allocated after this backward's first weight gradient
    double backwardDone = 0;   ///< share of the gradients this backward allocated before the reading
    /// The saved activations (those read as b*s^2 marked), and the temporaries read as b*s^2.
    std::vector<ScoreTensor> savedScores, tempScores;
};

/// What the split reads: the reading `point` inside iteration `it` and what is alive there.
struct TransientReading {
    const MemoryTimeline& timeline;
    const std::vector<Phase>& phase;
    const IterationPeak& iteration;
    int64_t point = -1;
    const LivePoint& live;
    double gradients = 0;                ///< the step's full gradients (bytes)
    bool amp = false;                    ///< the measured precision is autocast's
    const AllocationLaws* laws = nullptr; ///< each allocation's law, when the sequence is known
    int64_t tokens = 0;                  ///< b*s, 0 when unknown
};
TransientSplit splitTransients(const TransientReading& r);

} // namespace headroom
