// SPDX-License-Identifier: MIT
#pragma once

// What the replay of the measured history projects to (docs/whatif-model.md, "Replay" and
// "Precision"): the micro-batch and sequence each law is taken at, whether the checkpoint
// plan's moves apply, the element width of the floating-point tensors, and the optimizer's
// bytes.

namespace headroom {

struct ReplayTarget {
    double microBatch = 1, seq = 1;
    bool checkpointed = false;
    /// Several micro-steps per optimizer step: the history of a later one (every gradient alive
    /// through its forward), from a run measured at one.
    bool accumulated = false;
    /// Bytes of a floating-point element at the target over those of the measured run: 0.5
    /// from fp32 to pure bf16. Integer and bool tensors keep their size.
    double floatWidth = 1;
    /// bf16 autocast of an fp32 run, replayed from the recorder's op graph (autocastplan.h):
    /// the allocations autocast makes in bf16 at half their bytes, its copies added, the fp32
    /// originals autograd no longer holds freed early. Set with floatWidth 1.
    bool autocast = false;
    /// A pure narrowing (floatWidth below 1) by the recorded op graph's dtype flow
    /// (planPureFlow): the tensors its no-op casts keep in fp32 stay fp32, with their copies.
    bool dtypeFlow = false;
    /// Below 1: the build runs at the measured width and the model is cast after it (the cast
    /// plan's reading, docs/whatif-model.md); the band's low edge is the model built narrow.
    bool castAfterBuild = false;
    /// Fused attention (FlashAttention) for a run that materialised its scores: no tensor read
    /// b*s^2 is made (forward scores, their softmax, the backward's gradients of them); those
    /// that may be b*s^2 are dropped in the band's low edge only.
    bool fusedAttention = false;
    /// An optimizer change: its state's bytes and its step's temporaries' over the measured
    /// optimizer's, at the measured precision (0: the new one has none). Sharding and offload
    /// multiply these too.
    double optimizerState = 1, optimizerTemp = 1;
    /// Sharding and offload: the parameters' and the gradients' bytes on the device over the
    /// measured run's (ZeRO-3 over N: 1/N; parameters offloaded: 0).
    double parameters = 1, gradients = 1;
    /// The measured run's gathered layers (FSDP, ZeRO-3) on the device over its own: 0 where
    /// the target shards no parameters.
    double gathers = 1;
    /// Bytes alive at every event that the measured run did not have: ZeRO-3's or parameter
    /// offload's gathered layer. Central, and the band's edges.
    double standing = 0, standingLow = 0, standingHigh = 0;
};

} // namespace headroom
