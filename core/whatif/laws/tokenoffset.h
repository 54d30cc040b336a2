// SPDX-License-Identifier: MIT
#pragma once

// Attention scores over more tokens than the stated sequence, read from sizes where no shape
// was recorded (docs/whatif-model.md, "Laws", stage 4b). A ViT's scores are over its patches
// and its class token, b*h*(s0+1)^2 for a stated s0 patches: no multiple of b*s0^2, and a
// Tensor.softmax under the model's own forward names no attention, so neither the size stage
// nor the stack reads them, and a move of the sequence grows them as b*s.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// The tokens beyond s0 the sizes show, and the candidates that read so.
struct SizeTokenOffset {
    int offset = 0;             ///< c in 1..8; 0: none decided
    std::vector<std::size_t> scores; ///< indices into the candidates that divide as b0*(s0+c)^2
    int64_t bytes = 0;          ///< theirs
};

/// Candidates: the sizes of the forward's activations and temporaries (above the allocator's
/// smallest block) not already read as b*s^2. One reads b0*(s0+c)^2 when it is no multiple of
/// b0*s0^2 and is that times an even number of bytes (heads times an element width of 2 or 4;
/// allocations round up to 512 B). The offset is the c whose readings hold at least two
/// candidates and at least twice the bytes of any other c's, and whose tokens b0*(s0+c) divide
/// exactly at least half the bytes of the other candidates (the layers' activations are over the same
/// tokens): a wrongly stated sequence meets one c by coincidence of the scores' sizes, not the
/// activations' as well.
SizeTokenOffset sizeTokenOffset(const std::vector<int64_t>& candidates, int b0, int s0);

} // namespace headroom
