// SPDX-License-Identifier: MIT
#pragma once

// Activation checkpointing as a transformation of the measured history (docs/whatif-model.md,
// "Checkpointing"). In the recorded run a block's saved tensors live from its forward to its
// backward; checkpointed, the block keeps only its output, and its saved tensors are made again
// (the recompute) when the backward reaches it. The plan says which allocations move and when;
// TraceProjector replays the history with those moves.

#include "core/model/snapshotmodel.h"
#include "core/model/stringpool.h"
#include "core/replay/replay.h"
#include "core/whatif/vocabulary/whatifblocks.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

/// The saved tensors of a forward in allocation order, one item per key: consecutive tensors of
/// one stack (an LSTM's time steps) are one item. Keyed by stack, by size in a trace without stacks.
struct SavedSequence {
    std::vector<uint64_t> keys;
    std::vector<int64_t> bytes;
    std::vector<std::vector<uint32_t>> items; ///< allocation indices of each key
};
SavedSequence savedSequence(const MemoryTimeline& tl, std::vector<uint32_t> saved);

struct CheckpointPlan {
    /// A boundary the transformation adds: `end` frees a saved tensor when its block's forward
    /// ends, a start makes it again when the backward reaches the block.
    struct Move {
        int64_t event = 0;
        uint32_t alloc = 0;
        bool end = false;
    };
    std::vector<Move> moves; ///< by event
    int blocks = 0;
    int runs = 0;               ///< the repeats they came from (an encoder's and a decoder's layers: 2)
    int64_t from = -1, to = -1; ///< the iteration the plan transforms: its events, inclusive
    double coverage = 0;        ///< share of the forward's saved bytes inside the blocks
    /// The most a block's forward held at once beyond its saved tensors (its temporaries at
    /// their highest): what its recompute may add, as the replay re-makes the saved ones only.
    int64_t recomputeTransient = 0;
    int64_t largestOutput = 0; ///< the largest tensor a block keeps (its output)
    bool byModule = false;     ///< the blocks are the layers the recorder named (moduleblocks.h)
    bool empty() const { return moves.empty(); }
};

/// Blocks covering less of the forward's saved bytes than this leave checkpointing to the
/// terms: the rest of the model would keep everything it saved (a convnet whose stages of
/// different widths repeat only in pairs: 63%; the transformers of the CPU matrix 89-94%).
inline constexpr double kMinCheckpointCoverage = 0.75;

/// Every block of the iteration [from, to] checkpointed. `saved`: the activations alive where the
/// iteration's backward starts (made in its forward, freed in its backward). The blocks are the
/// layers of the recorded modules (`tensors`, their names in `strings`) where a recorder named
/// them, else the stacks' repeats. Empty when fewer than two blocks are found.
CheckpointPlan planCheckpointing(const MemoryTimeline& tl, const std::vector<uint32_t>& saved, int64_t from, int64_t to,
                                 const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors = {},
                                 const StringPool* strings = nullptr);

} // namespace headroom
