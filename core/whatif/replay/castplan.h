// SPDX-License-Identifier: MIT
#pragma once

// A pure 16-bit precision for a model the trace shows being built on the device, as a
// transformation of the history (docs/whatif-model.md, "Precision: the cast after the build").
// The usual way to get there from an fp32 job is to cast the model it builds
// (`model.to(torch.bfloat16)`, `.half()`): the build then runs at the measured width, and the
// cast makes each tensor's 16-bit copy before it frees the original, one tensor after another,
// so every fp32 weight is alive at once. A model built at the target width (`dtype=` at
// construction, or cast before it reaches the device) never holds them; the trace cannot tell
// the two apart, so the band keeps both.

#include "core/analysis/categoryclassifier.h"
#include "core/analysis/phaseclassifier.h"
#include "core/replay/replay.h"
#include "core/whatif/laws/allocationlaw.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace headroom {

struct CastPlan {
    /// The first event after the build: before it, the build's allocations are at the measured
    /// width; at it, the cast. -1: no plan.
    int64_t event = -1;
    /// The floating-point tensors alive at `event` that the build made, in the order they were
    /// made (the order a module's `.to()` visits its parameters): each is copied, then freed.
    std::vector<uint32_t> cast;
    /// Every allocation the trace shows born before `event`, sorted: at the measured width there.
    std::vector<uint32_t> built;
    int64_t parameters = 0, parameterBytes = 0; ///< the parameters among `cast`, measured

    bool empty() const { return cast.empty(); }
    bool builtBefore(uint32_t alloc) const { return std::binary_search(built.begin(), built.end(), alloc); }
};

/// The plan where the trace shows the parameters being made before the first forward: the
/// build ends after the last of them. Empty where the parameters were alive before the trace
/// (nothing shows how they were made) or none was made before a forward.
CastPlan planCast(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes, const PhaseAnalysis& phases,
                  const AllocationLaws& laws);

} // namespace headroom
