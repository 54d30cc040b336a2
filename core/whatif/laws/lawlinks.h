// SPDX-License-Identifier: MIT
#pragma once

// Allocations that must grow alike (docs/whatif-model.md, "Laws", evidence "like"): a
// recorder's `like` links join a shape-preserving op's output (a pointwise op, a copy, a
// softmax) to each input of its exact shape. Whatever each one's size allows, a class has one
// law: its readings are the ones every member allows.

#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"
#include "core/whatif/laws/sizelaw.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace headroom {

/// The classes of two or more allocations (indices into `allocations`) the links join;
/// a link to an event that made no allocation is ignored.
std::vector<std::vector<size_t>> likeClasses(const std::vector<Allocation>& allocations,
                                             const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors);

/// One class's law: the central reading of its most trusted member, and the readings every
/// member allows (a member read by its size or a mirror allows every law its size is a multiple
/// of the unit of: its own narrower set comes from rules about frames, not from evidence).
struct ClassReading {
    SizeLaw central = SizeLaw::Constant;
    uint8_t allowed = 0;
};
/// nullopt where the class says nothing: members of the top trust read it differently, no
/// reading is allowed to all, or members count tokens differently (the class token).
std::optional<ClassReading> classReading(const std::vector<size_t>& members, const std::vector<AllocationLaw>& laws,
                                         const std::vector<Allocation>& allocations, int b0, int s0);

} // namespace headroom
