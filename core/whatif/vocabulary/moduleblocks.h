// SPDX-License-Identifier: MIT
#pragma once

// A model's layers by the modules a recorder named (docs/whatif-model.md, "Checkpointing"):
// the children "P.0", "P.1", ... of one container P, as named_modules() names a ModuleList's
// or a Sequential's, are what a user wraps in torch.utils.checkpoint one by one.

#include "core/model/snapshotmodel.h"
#include "core/model/stringpool.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

struct ModuleBlocks {
    std::vector<std::vector<uint32_t>> blocks; ///< allocation indices of each layer, in forward order
    int containers = 0;                        ///< the layer lists they came from (an encoder's and a decoder's: 2)
};

/// The allocations of `saved` whose recorded module is inside a layer of a list of two or more
/// layers that have modules of their own, grouped by layer; empty without recorded modules.
ModuleBlocks moduleBlocks(const MemoryTimeline& tl, const std::vector<uint32_t>& saved,
                          const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, const StringPool& strings);

} // namespace headroom
