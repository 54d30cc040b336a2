// SPDX-License-Identifier: MIT
#pragma once

// Allocations that must grow alike (docs/whatif-model.md, "Laws", evidence "like"): a
// recorder's `like` links join a shape-preserving op's output (a pointwise op, a copy, a
// softmax) to each input of its exact shape. Whatever each one's size allows, a class has one
// law: its readings are the ones every member allows.

#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

/// The classes of two or more allocations (indices into `allocations`) the links join;
/// a link to an event that made no allocation is ignored.
std::vector<std::vector<size_t>> likeClasses(const std::vector<Allocation>& allocations,
                                             const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors);

} // namespace headroom
