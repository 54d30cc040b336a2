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
#include "core/whatif/allocationlaw.h"

#include <cstdint>

namespace headroom {

/// Bit per SizeLaw the shape's marks give (every mark counted; a mark of both b and s either
/// way); 0 when it tells nothing (no marked dimension, or no law the replay knows).
uint8_t shapeLaws(const RecordedTensor& t, int b0, int s0);

} // namespace headroom
