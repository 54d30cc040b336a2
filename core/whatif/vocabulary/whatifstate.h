// SPDX-License-Identifier: MIT
#pragma once

// The terms model's vocabulary (docs/whatif-model.md): a WhatIfState holds the memory terms of
// one training configuration. Levers (whatiflevers.h) and the replay (replayprojection.h) turn
// one state into another; whatifprojection.h evaluates it.

#include "core/model/tensorcategory.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

class TraceProjector;

/// One memory term with its provenance and relative uncertainty.
struct Term {
    double bytes = 0;
    double relErr = 0;
    Provenance provenance = Provenance::Modelled;
    /// Where a reading the evidence allows lies further above than below: the band's high
    /// side is max(relErr, relErrHigh).
    double relErrHigh = 0;
};

/// The attention scores under CUDA's autocast lists, as a calibration read them
/// (core/whatif/calibration/scoresautocast.h): factors on the fp32 run's bytes, 0 = not read.
struct ScoresAutocast {
    double saved = 0;              ///< on `actQuad`, read from the call's count (10% each side)
    double temps = 0, tempsLow = 0; ///< on a no_grad forward's scores in `logits`: the reading, and every one narrowed
    double tempsShare = 0;         ///< their share of `logits`
};

/// The memory terms of one configuration, per device. Activations are kept as they would be
/// without checkpointing and with attention scores materialised; `config.checkpoint` and
/// `config.flashAttention` decide what is stored when the phases are assembled.
struct WhatIfState {
    LeverConfig config;
    /// > 0: the measured micro-batch is unknown and counts as this many units, so
    /// config.microBatch is a ratio of it (core/whatif/calibration/batchratio.h); tokens are then unknown.
    int microBatchUnits = 0;
    bool calibrated = false;    ///< from a trace (else analytic)
    bool torchAutocast = false; ///< AMP as torch.autocast: fp32 params + a 16-bit weight cache
    bool cpuAutocast = false;   ///< recorded on the CPU, whose autocast narrows softmax too
    bool forwardOnly = false;   ///< the trace had no backward: project the forward only
    ModelDims dims;             ///< may be invalid in calibrated mode
    double params = 0;          ///< P (0: unknown)
    int layers = 24;
    bool layersGuessed = false;

    Term weights, master, grads, optimizer;
    double gradFwdFraction = 0; ///< share of G alive at the start of backward when accum == 1
    double backwardDone = 0;    ///< share of G that the backward holding the start-of-backward
                                ///< reading had allocated by then (0: read before the backward)
    /// A forward-only trace: the share of its weight uses made by its peak (autocastcache.h);
    /// -1 unknown.
    double forwardWeightUses = -1;
    /// A forward-only trace's weight uses: the share of the uses made by each, and the bytes
    /// the forward held above its start there as a share of those at its peak. Under autocast
    /// the cache grows with the uses while these fall, so its peak may move to a later use.
    struct ForwardMoment {
        double share = 0, transient = 0;
    };
    std::vector<ForwardMoment> forwardMoments;
    Term actLin;        ///< saved activations linear in b*s (incl. logits kept for backward)
    Term actQuad;       ///< attention scores, masks, softmax: b*s^2 (0 with FlashAttention measured)
    Term actSmall;      ///< saved activations in the allocator's smallest block (512 B): one per
                        ///< step of the sequence, too small to grow with the batch
    Term autocastCache; ///< 16-bit copies of fp32 weights saved for backward (torch.autocast)
    Term logits;        ///< batch-proportional temporaries at the start of backward
    ScoresAutocast scoresAutocast;
    double logitsGradShare = 0; ///< share of `logits` that are gradients of the network's
                                ///< activations (allocated after this backward's first weight
                                ///< gradient), not of the loss's tensors
    Term bwdTemp;       ///< batch-proportional temporaries at the end of backward
    Term optAct;        ///< batch-proportional bytes still alive in the optimizer step
    Term optTemp;       ///< parameter-proportional temporaries of the optimizer step (foreach)
    Term constTemp;     ///< workspaces and other constant temporaries
    Term gather;        ///< ZeRO-3 / offload: gathered working set of one layer
    /// An inference engine's KV cache and weights (isEngineMemory): sized by the engine's own
    /// settings and read whole, so no lever moves or widens them (the batch's widening of
    /// constTemp would put a 20 GiB cache's whole size into the band).
    Term kvCache, engineWeights;
    double fragRatio = 0.05;
    Provenance fragProvenance = Provenance::Default;
    double context = 1.0 * (1ull << 30), contextHigh = 2.0 * (1ull << 30);
    Provenance contextProvenance = Provenance::Default;
    /// The target GPU's cuBLAS workspaces per matmul thread, which a recording made off it
    /// cannot show (targetworkspaces.h): one thread in the forward, two once a backward ran.
    double workspaceEach = 0, workspaceEachHigh = 0;
    /// Matmul threads holding a workspace at step phase `i`: the forward's, and from the end
    /// of the backward on autograd's device thread too.
    int workspaceThreads(size_t i) const { return i == 0 || forwardOnly ? 1 : 2; }

    /// Other readings of a measured precision the trace does not tell (config.precision is
    /// the first): project() projects each and folds it into the band.
    std::vector<Precision> precisionAlternatives;
    /// A second reading of the start of backward, where the measured run peaked inside its
    /// backward: the late point when it had freed most activations (the first reading is then
    /// the forward/backward boundary), else the boundary (the first reading is the point):
    /// project() takes whichever projects higher.
    std::shared_ptr<const WhatIfState> lateBackward;
    /// Every allocation of the measured trace with its law (docs/whatif-model.md): a target
    /// that moves only the micro-batch and the sequence takes its peak from this replay.
    std::shared_ptr<const TraceProjector> trace;
    /// Each of the trace's allocations' tensor category, parallel to its allocations: what the
    /// replay's peak is made of (peakbreakdown.h).
    std::shared_ptr<const std::vector<TensorCategory>> categories;

    bool structural = false;       ///< a lever that changes the allocation pattern was applied
    double measuredStepTime = -1;  ///< seconds per optimizer step in the trace
    std::array<double, kStepPhaseCount> measuredAllocated{-1, -1, -1};
    /// The event each measured point was read at and its phase as the classifier has it (what
    /// the Breakdown shows when that event is selected): a label says which moment a number is.
    std::array<int64_t, kStepPhaseCount> measuredEvents{-1, -1, -1};
    std::array<std::string, kStepPhaseCount> measuredEventPhases;
    std::vector<std::string> notes;

    double trainable() const { return params * config.trainableFraction; }
    /// The state's per-parameter bytes for a precision/optimizer (torch.autocast aware).
    StateBytes table(Precision p, OptimizerKind o) const;
};

using WhatIfBaseline = WhatIfState;

} // namespace headroom
