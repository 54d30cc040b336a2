// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <cstdint>
#include <vector>

namespace headroom {

/// One block of a segment in a reconstructed allocator state: an allocation (allocated or
/// pending free) or a cached free gap between them.
struct StateBlock {
    static constexpr uint32_t kNoAllocation = UINT32_MAX;

    uint64_t address = 0;
    int64_t size = 0;      ///< bytes the block occupies (rounded; unsplit remainders included)
    int64_t requested = 0; ///< bytes the program asked for (0 for free blocks)
    BlockState state = BlockState::Inactive;
    uint32_t allocation = kNoAllocation; ///< index into MemoryTimeline::allocations
    uint32_t stack = 0;                  ///< FrameTable stack of the owning allocation
};

/// A segment (or, for expandable segments, a mapped range) alive at the event.
struct StateSegment {
    uint64_t address = 0;
    int64_t size = 0;
    int64_t stream = 0;
    bool largePool = true;
    bool beforeWindow = false; ///< reserved before the trace began
    bool expandable = false;   ///< mapped pages of an expandable segment: one range with its neighbours
    uint32_t firstBlock = 0;   ///< into AllocatorState::blocks
    uint32_t blockCount = 0;
    int64_t allocated = 0;     ///< bytes of allocated + pending-free blocks
    /// The private pool it belongs to (a CUDA graph's, a MemPool's); (0, 0): the default pool.
    std::pair<int64_t, int64_t> poolId{0, 0};
    bool privatePool() const { return poolId != std::pair<int64_t, int64_t>{0, 0}; }
};

/// The caching allocator's segments and blocks after one event, with the fragmentation
/// figures the allocator view and the diagnosis need.
struct AllocatorState {
    int64_t event = -1; ///< the state after this event; -1 before the first
    bool recorded = false; ///< the snapshot's own blocks, not a reconstruction from the trace
    std::vector<StateSegment> segments; ///< by address
    std::vector<StateBlock> blocks;     ///< grouped by segment, by address inside each
    int64_t reserved = 0;
    int64_t allocated = 0;        ///< requested bytes of live allocations (the timeline's curve)
    int64_t allocatedBlocks = 0;  ///< rounded bytes of allocated blocks
    int64_t pendingFree = 0;      ///< rounded bytes of pending-free blocks
    int64_t inactive = 0;         ///< cached free bytes
    int64_t inactiveBlocks = 0;
    int64_t largestFree = 0;
    int64_t internal = 0;         ///< rounding: block bytes minus requested bytes
    int64_t unplacedCount = 0;    ///< live allocations in no known segment (events lost)
    int64_t unplacedBytes = 0;

    /// Cached free bytes in blocks too small to serve `request` bytes: the external
    /// fragmentation that request would meet (all of `inactive` if nothing fits).
    int64_t unusableFor(int64_t request) const;
    /// Cached free bytes outside the largest free block.
    int64_t externalFragmentation() const { return inactive - largestFree; }

    /// One private pool's share of the state (the official viewer draws each apart).
    struct PoolShare {
        std::pair<int64_t, int64_t> poolId;
        size_t segments = 0;
        int64_t reserved = 0;
        int64_t allocated = 0; ///< block bytes allocated or pending free
    };
    /// The private pools' shares, in the order of their ids; empty when every segment is
    /// in the default pool.
    std::vector<PoolShare> privatePools() const;
};

/// The snapshot's recorded segments and blocks (exact sizes and states), as an
/// AllocatorState after the last event.
AllocatorState recordedAllocatorState(const DeviceData& device);

/// PyTorch's caching-allocator rounding (512-byte multiples, at least 512).
int64_t allocatorRoundSize(int64_t requested);

} // namespace headroom
