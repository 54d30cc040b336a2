// SPDX-License-Identifier: MIT
#pragma once

// How many of the weights' 16-bit casts autocast holds at a forward's peak (docs/whatif-model.md,
// "Precision"): PyTorch caches the cast of every fp32 weight that requires grad (a leaf) until
// the autocast region ends, whether grad is on or off (1.13's cached_cast tests the tensor's
// requires_grad, not the grad mode), so a forward under no_grad holds the casts of the weights
// it has used so far.

#include "core/model/frametable.h"
#include "core/replay/replay.h"
#include "core/whatif/vocabulary/whatifstate.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace headroom {

/// A forward's weight uses: the outputs of torch's Linear and Conv layers (each call allocates
/// one) allocated in a span, and how many of them by an event.
struct WeightUses {
    int64_t before = 0, total = 0;
    std::vector<int64_t> events; ///< each use's event, in order
    double share() const { return double(before) / double(total); }
};

/// The weight uses in [from, to], `before` counting those made by event `at`; nullopt when the
/// span has none (a model of its own matmuls: no frame says which op used a weight).
std::optional<WeightUses> weightUsesBefore(const MemoryTimeline& timeline, const FrameTable& frames, int64_t from,
                                           int64_t to, int64_t at);

/// A forward-only iteration's weight uses as moments (WhatIfState::forwardMoments): the share
/// of the uses made by each, and the bytes held above the iteration's start (`start`) there
/// as a share of those at its peak (`peak`).
std::vector<WhatIfState::ForwardMoment> forwardMoments(const MemoryTimeline& timeline, int64_t start, int64_t peak,
                                                       const WeightUses& uses);

} // namespace headroom
