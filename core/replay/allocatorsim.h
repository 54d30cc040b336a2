// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"
#include "core/replay/allocatorconstants.h"
#include "core/replay/allocatorsimconfig.h"

#include <cstdint>
#include <set>
#include <vector>

namespace headroom {

/// What the driver answers when the simulated allocator asks for device memory: a replay of a
/// recording answers as the recording did, a what-if replay from a capacity.
class DeviceMemory {
public:
    virtual ~DeviceMemory() = default;
    /// cudaMalloc of `size` bytes with `reserved` bytes already held: false is out of memory;
    /// otherwise `addr` is where the segment starts.
    virtual bool malloc(int64_t size, int64_t reserved, int64_t stream, uint64_t& addr) = 0;
    /// Maps `size` more bytes of an expandable segment.
    virtual bool map(int64_t size, int64_t reserved) = 0;
    /// Virtual address space for a new expandable segment of `size` bytes.
    virtual uint64_t reserveAddressSpace(int64_t size) = 0;
    /// The most the allocator may reserve (garbage_collection_threshold is a share of it);
    /// 0 when unknown, which leaves the collection off as PyTorch does without a memory fraction.
    virtual int64_t allowedMaximum() const { return 0; }
};

/// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
/// DeviceCachingAllocator) for one device: small (<= 1 MiB) and large pools per private
/// pool, best fit by (stream, size, address), 512-byte and power-of-two-division rounding,
/// 2 MiB / 20 MiB / 2 MiB-rounded segments, splitting and coalescing, max_split_size
/// oversize blocks, garbage collection, freeing cached blocks and retrying before an OOM,
/// and expandable segments mapped in pages. It records the segment events PyTorch would.
class AllocatorSim {
public:
    static constexpr int32_t kNone = -1;
    static constexpr int64_t kMinBlock = allocator::kMinBlock;
    static constexpr int64_t kSmallSize = allocator::kSmallSize;
    static constexpr int64_t kSmallBuffer = allocator::kSmallBuffer;
    static constexpr int64_t kLargeBuffer = allocator::kLargeBuffer;
    static constexpr int64_t kMinLargeAlloc = allocator::kMinLargeAlloc;
    static constexpr int64_t kRoundLarge = allocator::kRoundLarge;

    struct SegmentEvent {
        TraceAction action = TraceAction::SegmentAlloc;
        uint64_t addr = 0;
        int64_t size = 0;
        int64_t stream = 0;
    };

    AllocatorSim(const AllocatorConfig& config, DeviceMemory& memory);

    int64_t roundSize(int64_t requested) const;
    static int64_t allocationSize(int64_t rounded);

    /// Serves a request of `requested` bytes from private pool `privatePool` (0: the default
    /// pools). Returns the block, or kNone when the device is out of memory.
    int32_t malloc(int64_t requested, int64_t stream, int privatePool = 0);
    void free(int32_t block);
    /// torch.cuda.empty_cache(): returns every unsplit cached segment and unused page.
    void emptyCache();
    /// Whether a cached block would serve the request without new device memory.
    bool servesFromCache(int64_t requested, int64_t stream, int privatePool = 0);

    /// A segment that existed before the replay: `blocks` tile it (address, size, allocated,
    /// requested). Returns the ids of its allocated blocks, in order.
    struct InitialBlock {
        uint64_t address = 0;
        int64_t size = 0;
        bool allocated = false;
        int64_t requested = 0;
    };
    /// An expandable one gets its address space after the blocks, unmapped.
    std::vector<int32_t> addSegment(uint64_t address, int64_t stream, bool small, int privatePool,
                                    const std::vector<InitialBlock>& blocks, bool expandable = false);
    /// A live block outside every known segment (a resynchronisation with the recording):
    /// counted as allocated, never cached when freed.
    int32_t addDetached(uint64_t address, int64_t size, int64_t requested, int64_t stream);
    /// Takes [address, address + rounded size) out of the free block holding it, the way the
    /// recording placed an allocation; kNone when no free block holds it.
    int32_t allocateAt(uint64_t address, int64_t requested, int64_t stream);

    /// Gives back a whole cached segment starting at `address` without a segment event (the
    /// replay undoing a segment the recording never made); false when there is none.
    bool dropFreeSegment(uint64_t address);

    uint64_t address(int32_t b) const { return m_blocks[size_t(b)].ptr; }
    int64_t blockSize(int32_t b) const { return m_blocks[size_t(b)].size; }
    int64_t reserved() const { return m_reserved; }
    int64_t allocated() const { return m_allocated; } ///< bytes of allocated blocks
    /// Cached free bytes (mapped) and the largest such block.
    int64_t cachedFree() const;
    int64_t largestFree() const;

    std::vector<SegmentEvent>& events() { return m_events; }
    const AllocatorConfig& config() const { return m_config; }

private:
    struct Blk {
        uint64_t ptr = 0;
        int64_t size = 0;
        int64_t requested = 0;
        int64_t stream = 0;
        int64_t gcBase = 0;
        int32_t prev = kNone;
        int32_t next = kNone;
        int32_t es = kNone; ///< expandable segment, or kNone
        int32_t pool = kNone; ///< kNone: detached
        bool allocated = false;
        bool mapped = true;
        bool dead = false;
    };
    struct SizeKey {
        uint64_t stream;
        int64_t size;
        uint64_t ptr;
        int32_t id;
        bool operator<(const SizeKey& o) const
        {
            return stream != o.stream ? stream < o.stream : size != o.size ? size < o.size : ptr < o.ptr;
        }
    };
    struct AddrKey {
        uint64_t stream;
        uint64_t ptr;
        int32_t id;
        bool operator<(const AddrKey& o) const { return stream != o.stream ? stream < o.stream : ptr < o.ptr; }
    };
    struct Pool {
        bool small = false;
        std::set<SizeKey> blocks;
        std::set<AddrKey> unmapped;
        int64_t freeBlockCalls = 0;
    };
    struct Expandable {
        uint64_t base = 0;
        int64_t size = 0; ///< address space
        int64_t page = 0;
        bool alive = true;
    };

    int32_t newBlock(const Blk& b);
    void deleteBlock(int32_t id);
    SizeKey sizeKey(int32_t id) const;
    AddrKey addrKey(int32_t id) const;
    void insertFree(int32_t id);
    void eraseFree(int32_t id);
    bool isSplit(int32_t id) const { return m_blocks[size_t(id)].prev != kNone || m_blocks[size_t(id)].next != kNone; }
    int poolIndex(int64_t rounded, int privatePool);
    bool gcEnabled() const;

    int32_t getFreeBlock(Pool& pool, int64_t size, int64_t stream, bool take);
    bool allocBlock(int pool, int64_t size, int64_t allocSize, int64_t stream, int32_t& out);
    int32_t tryAllocateExpandable(int pool, int64_t size, int64_t stream);
    int32_t findExpandableBlock(int pool, int64_t size, int64_t stream);
    bool mapBlock(int32_t id, int64_t size);
    void unmapBlock(int32_t id);
    bool releaseAvailableCachedBlocks(int pool, int64_t size, int64_t stream);
    void releaseCachedBlocks();
    void releaseBlocks(int pool);
    void releaseBlock(int32_t id);
    void garbageCollect();
    bool shouldSplit(int32_t id, int64_t size) const;
    int32_t splitFront(int32_t id, int64_t size);
    /// Allocates `size` bytes of free block `id` (split when the rules say so): the block used.
    int32_t takeBlock(int32_t id, int64_t size, int64_t requested);
    int64_t tryMerge(int32_t dst, int32_t src);
    int32_t freeBlock(int32_t id);

    AllocatorConfig m_config;
    DeviceMemory& m_memory;
    std::vector<Blk> m_blocks;
    std::vector<int32_t> m_spare;
    std::vector<Pool> m_pools; ///< 2 * private pool + (small ? 1 : 0)
    std::vector<Expandable> m_expandable;
    std::vector<SegmentEvent> m_events;
    int64_t m_reserved = 0;
    int64_t m_allocated = 0;
};

} // namespace headroom
