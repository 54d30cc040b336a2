// SPDX-License-Identifier: MIT
#pragma once

// The backward's incoming gradients (docs/whatif-model.md, "Laws", evidence `gradient`): from
// the second micro-step of an accumulation on, or with zero_grad(set_to_none=False), the
// backward makes each weight's gradient as a temporary and adds it into the .grad kept from
// before: as large as the weight at any batch, though its size may be a multiple of b*s.

#include "core/analysis/categoryclassifier.h"
#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"
#include "core/whatif/laws/sizelaw.h"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

struct IncomingGradient {
    size_t index = 0;     ///< the allocation
    bool central = false; ///< constant is its central reading, not only one its band keeps
};

/// The allocations born in the backward, read so far by their size or a mirror, that are of a
/// gradient's size (and, where a shape was recorded, of a weight's shape): each may be an
/// incoming gradient. It is the central reading where no forward tensor has its size (`laws`
/// still says Size, not Mirror) and a gradient of its size, born before the forward that
/// precedes it, is alive at its birth: a plain step's other layers' gradients, made by the same
/// backward, say nothing.
std::vector<IncomingGradient> incomingGradients(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes,
                                                const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                                const std::vector<AllocationLaw>& laws);

} // namespace headroom
