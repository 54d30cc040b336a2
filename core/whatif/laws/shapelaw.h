// SPDX-License-Identifier: MIT
#pragma once

// The laws a recorded tensor shape allows (docs/whatif-model.md, "Laws", evidence "shape"):
// the recorder marks the dimensions equal to the stated micro-batch b0 and sequence s0; in a
// shape without marks, a dimension of b0*s0 (a flattened [b*s, d]) counts as both. A mark is
// an equality, not a provenance: a dimension may equal b0 or s0 by coincidence (two heads at
// micro-batch 2, a head width of 64 at sequence 64), and a token count of s0 + 1 (a ViT's
// class token) is not marked. So the shape's readings only narrow what the size and the stack allow
// (AllocationLaws::readShapes); marks that give no law the replay knows tell nothing.

#include "core/model/snapshotmodel.h"
#include "core/whatif/laws/sizelaw.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

/// Which of b0 and s0 the model's own widths share: a mark of that value may then be the
/// width, not the batch or the sequence.
struct MarkCoincidence {
    bool batch = false, seq = false;
};
/// A width is the last dimension of an output whose op took a weight of that size (an
/// embedding's or a Linear's output of d_model = 128 at sequence 128); a position table's
/// rows (max_seq = s0) are no width an output shows.
MarkCoincidence markCoincidence(const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int b0, int s0);

/// Bit per SizeLaw the shape's marks give (every mark counted; a mark of both b and s either
/// way; a mark of a coincident value also as a width that does not grow); 0 when it tells
/// nothing (no marked dimension, or no law the replay knows).
uint8_t shapeLaws(const RecordedTensor& t, int b0, int s0, MarkCoincidence coincident = {});

/// Whether `t`'s last dimension is the size of a weight its op took (a matrix or a vector).
bool lastDimIsWeightWidth(const RecordedTensor& t, uint32_t event,
                          const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors);
/// The dimension of `t` (made at `event`) that is a coincident mark and yet the width of a
/// parameter its op took (the last dimension of an embedding's or a Linear's output, equal
/// to a weight's dimension): -1 when no recorded input says so.
int weightWidthDim(const RecordedTensor& t, uint32_t event,
                   const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int b0, int s0,
                   MarkCoincidence coincident);
/// `t`'s laws with dimension `dim` taken as a width (its marks dropped), the others as marked.
uint8_t shapeLawsWithWidth(const RecordedTensor& t, int b0, int s0, int dim);

/// Bit per dimension of `t` equal to s0 + c.
uint32_t offsetDims(const RecordedTensor& t, int s0, int c);
/// Tokens beyond s0 the recorded shapes show: the c in 1..kMaxShapeOffset of the most tensors
/// with two dimensions of s0 + c (scores over a ViT's patches and its class token); 0: none.
inline constexpr int kMaxShapeOffset = 8;
int shapeTokenOffset(const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int s0);
/// The laws of `t` over s0 + c tokens: its dimensions of s0 + c are the sequence, and a mark of
/// s0 a width that equals it (a tensor over s0 + c tokens has no dimension of s0 tokens).
uint8_t offsetShapeLaws(const RecordedTensor& t, int b0, int s0, int c);

} // namespace headroom
