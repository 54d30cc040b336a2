// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/frametable.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// What a snapshot's stacks tell about the training precision. Sizes alone cannot: a pure
/// bf16 run and an fp32 run keep the same ratios of optimizer state to weights, and a
/// bf16 activation can be exactly half an fp32 weight by coincidence.
struct PrecisionEvidence {
    bool cppFrames = false;   ///< the stacks include C++ frames (PyTorch 2.1+ with context="all")
    bool autocast = false;    ///< at::autocast frames: ops ran under torch.autocast
    bool gradScaler = false;  ///< a GradScaler's kernels or code: fp16 autocast
    bool moduleTo16 = false;  ///< Module.half() / Module.bfloat16(): parameters converted to 16 bits

    /// The precision the evidence shows, if it shows one.
    std::optional<Precision> precision() const;
    /// Where it was read from, for the measured configuration's "how".
    std::string detail() const;
    /// The readings the evidence leaves open when precision() is empty, most likely first:
    /// fp32 or pure bf16 when C++ stacks show no autocast, else also autocast.
    std::vector<Precision> candidates() const;

    static PrecisionEvidence read(const FrameTable& frames);
};

} // namespace headroom
