// SPDX-License-Identifier: MIT
#pragma once

// What the replay of the measured history projects to (docs/whatif-model.md, "Replay" and
// "Precision"): the micro-batch and sequence each law is taken at, whether the checkpoint
// plan's moves apply, and the element width of the floating-point tensors.

namespace headroom {

struct ReplayTarget {
    double microBatch = 1, seq = 1;
    bool checkpointed = false;
    /// Bytes of a floating-point element at the target over those of the measured run: 0.5
    /// from fp32 to pure bf16. Integer and bool tensors keep their size.
    double floatWidth = 1;
};

} // namespace headroom
