// SPDX-License-Identifier: MIT
#include "core/replay/allocatorsim.h"

#include <algorithm>
#include <bit>

namespace headroom {

AllocatorSim::AllocatorSim(const AllocatorConfig& config, DeviceMemory& memory)
    : m_config(config)
    , m_memory(memory)
    , m_pools(2)
{
    m_pools[1].small = true;
}

int64_t AllocatorSim::roundSize(int64_t size) const
{
    if (size < kMinBlock)
        return kMinBlock;
    const int64_t divisions = m_config.divisionsFor(size);
    if (divisions > 1 && size > kMinBlock * divisions) {
        // The next of `divisions` equal steps between the powers of two around the size.
        const auto u = uint64_t(size);
        if (std::has_single_bit(u))
            return size;
        const uint64_t floor2 = std::bit_floor(u);
        const uint64_t step = floor2 >> (std::bit_width(uint64_t(divisions)) - 1);
        if (step == 0)
            return int64_t(floor2 << 1);
        const uint64_t down = u & ~(step - 1);
        return int64_t(down == u ? u : down + step);
    }
    return (size + kMinBlock - 1) / kMinBlock * kMinBlock;
}

int64_t AllocatorSim::allocationSize(int64_t size)
{
    if (size <= kSmallSize)
        return kSmallBuffer;
    if (size < kMinLargeAlloc)
        return kLargeBuffer;
    return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

int32_t AllocatorSim::newBlock(const Blk& b)
{
    if (!m_spare.empty()) {
        const int32_t id = m_spare.back();
        m_spare.pop_back();
        m_blocks[size_t(id)] = b;
        return id;
    }
    m_blocks.push_back(b);
    return int32_t(m_blocks.size() - 1);
}

void AllocatorSim::deleteBlock(int32_t id)
{
    m_blocks[size_t(id)].dead = true;
    m_spare.push_back(id);
}

AllocatorSim::SizeKey AllocatorSim::sizeKey(int32_t id) const
{
    const Blk& b = m_blocks[size_t(id)];
    return {uint64_t(b.stream), b.size, b.ptr, id};
}

AllocatorSim::AddrKey AllocatorSim::addrKey(int32_t id) const
{
    const Blk& b = m_blocks[size_t(id)];
    return {uint64_t(b.stream), b.ptr, id};
}

void AllocatorSim::insertFree(int32_t id)
{
    Blk& b = m_blocks[size_t(id)];
    Pool& pool = m_pools[size_t(b.pool)];
    if (b.mapped) {
        b.gcBase = pool.freeBlockCalls;
        pool.blocks.insert(sizeKey(id));
    } else {
        pool.unmapped.insert(addrKey(id));
    }
}

void AllocatorSim::eraseFree(int32_t id)
{
    const Blk& b = m_blocks[size_t(id)];
    Pool& pool = m_pools[size_t(b.pool)];
    if (b.mapped)
        pool.blocks.erase(sizeKey(id));
    else
        pool.unmapped.erase(addrKey(id));
}

int AllocatorSim::poolIndex(int64_t rounded, int privatePool)
{
    const size_t base = 2 * size_t(std::max(0, privatePool));
    while (m_pools.size() < base + 2) {
        m_pools.emplace_back();
        m_pools.back().small = m_pools.size() % 2 == 0;
    }
    return int(base) + (rounded <= kSmallSize ? 1 : 0);
}

bool AllocatorSim::gcEnabled() const
{
    // PyTorch collects only under a per-process memory fraction; the replay's capacity
    // stands for the allowed maximum.
    return m_config.garbageCollectionThreshold > 0 && m_memory.allowedMaximum() > 0;
}

bool AllocatorSim::shouldSplit(int32_t id, int64_t size) const
{
    const Blk& b = m_blocks[size_t(id)];
    const int64_t remaining = b.size - size;
    if (m_pools[size_t(b.pool)].small || m_config.expandableSegments)
        return remaining >= kMinBlock;
    return size < m_config.maxSplitSize && remaining > kSmallSize;
}

int32_t AllocatorSim::getFreeBlock(Pool& pool, int64_t size, int64_t stream, bool take)
{
    if (take && gcEnabled())
        ++pool.freeBlockCalls;
    auto it = pool.blocks.lower_bound({uint64_t(stream), size, 0, 0});
    if (it == pool.blocks.end() || it->stream != uint64_t(stream))
        return kNone;
    if (m_blocks[size_t(it->id)].es != kNone) {
        if (m_config.expandableSegments) {
            // A block followed by unmapped space counts at the size it can grow to.
            auto growable = [&](int32_t id) {
                const Blk& b = m_blocks[size_t(id)];
                return b.size + (b.next != kNone && !m_blocks[size_t(b.next)].mapped ? m_blocks[size_t(b.next)].size : 0);
            };
            auto next = std::next(it);
            while (m_blocks[size_t(it->id)].es != kNone && next != pool.blocks.end() && next->stream == uint64_t(stream) &&
                   growable(next->id) < growable(it->id))
                it = next++;
        } else {
            do
                ++it;
            while (it != pool.blocks.end() && m_blocks[size_t(it->id)].es != kNone && it->stream == uint64_t(stream));
            if (it == pool.blocks.end() || it->stream != uint64_t(stream))
                return kNone;
        }
    }
    const int64_t found = it->size;
    if (size < m_config.maxSplitSize && found >= m_config.maxSplitSize)
        return kNone; // an oversize block is not split for a smaller request
    if (size >= m_config.maxSplitSize && found >= size + kLargeBuffer)
        return kNone; // nor handed out far above the request
    const int32_t id = it->id;
    if (take)
        pool.blocks.erase(it);
    return id;
}

bool AllocatorSim::servesFromCache(int64_t requested, int64_t stream, int privatePool)
{
    const int64_t size = roundSize(requested);
    return getFreeBlock(m_pools[size_t(poolIndex(size, privatePool))], size, stream, false) != kNone;
}

int32_t AllocatorSim::malloc(int64_t requested, int64_t stream, int privatePool)
{
    const int64_t size = roundSize(requested);
    const int p = poolIndex(size, privatePool);
    const int64_t allocSize = allocationSize(size);
    int32_t block = getFreeBlock(m_pools[size_t(p)], size, stream, true);
    if (block == kNone) {
        if (gcEnabled())
            garbageCollect();
        bool found = allocBlock(p, size, allocSize, stream, block);
        if (!found && releaseAvailableCachedBlocks(p, size, stream))
            found = allocBlock(p, size, allocSize, stream, block);
        if (!found) {
            releaseCachedBlocks();
            found = allocBlock(p, size, allocSize, stream, block);
        }
        if (!found)
            return kNone;
    }
    return takeBlock(block, size, requested);
}

int32_t AllocatorSim::takeBlock(int32_t id, int64_t size, int64_t requested)
{
    if (shouldSplit(id, size))
        id = splitFront(id, size);
    Blk& b = m_blocks[size_t(id)];
    b.allocated = true;
    b.requested = requested;
    m_allocated += b.size;
    return id;
}

int32_t AllocatorSim::splitFront(int32_t id, int64_t size)
{
    // The front becomes a new block; the rest stays cached under the old id.
    Blk front = m_blocks[size_t(id)];
    front.size = size;
    front.next = id;
    const int32_t f = newBlock(front);
    Blk& rest = m_blocks[size_t(id)];
    if (rest.prev != kNone)
        m_blocks[size_t(rest.prev)].next = f;
    rest.prev = f;
    rest.ptr += uint64_t(size);
    rest.size -= size;
    insertFree(id);
    return f;
}

bool AllocatorSim::allocBlock(int p, int64_t size, int64_t allocSize, int64_t stream, int32_t& out)
{
    if (m_config.expandableSegments) {
        out = tryAllocateExpandable(p, size, stream);
        return out != kNone;
    }
    uint64_t addr = 0;
    if (!m_memory.malloc(allocSize, m_reserved, stream, addr))
        return false;
    Blk b;
    b.ptr = addr;
    b.size = allocSize;
    b.stream = stream;
    b.pool = p;
    out = newBlock(b);
    m_reserved += allocSize;
    m_events.push_back({TraceAction::SegmentAlloc, addr, allocSize, stream});
    return true;
}

int32_t AllocatorSim::findExpandableBlock(int p, int64_t size, int64_t stream)
{
    Pool& pool = m_pools[size_t(p)];
    auto allocatable = [&](int32_t id) {
        return id != kNone && !m_blocks[size_t(id)].allocated;
    };
    auto hasRoom = [&](int32_t id) {
        int64_t bytes = 0;
        while (bytes < size && allocatable(id)) {
            bytes += m_blocks[size_t(id)].size;
            id = m_blocks[size_t(id)].next;
        }
        return bytes >= size;
    };
    for (auto it = pool.unmapped.lower_bound({uint64_t(stream), 0, 0});
         it != pool.unmapped.end() && it->stream == uint64_t(stream); ++it) {
        int32_t c = it->id;
        // Free mapped space just before the unmapped range is used first.
        if (allocatable(m_blocks[size_t(c)].prev) && m_blocks[size_t(m_blocks[size_t(c)].prev)].mapped)
            c = m_blocks[size_t(c)].prev;
        if (hasRoom(c))
            return c;
    }
    Expandable es;
    es.page = pool.small ? kSmallBuffer : kLargeBuffer;
    // Address space for 1 1/8 of the device; the replay does not know the device, so 1 TiB.
    es.size = int64_t(1) << 40;
    es.base = m_memory.reserveAddressSpace(es.size);
    m_expandable.push_back(es);
    Blk b;
    b.ptr = es.base;
    b.size = es.size;
    b.stream = stream;
    b.pool = p;
    b.es = int32_t(m_expandable.size() - 1);
    b.mapped = false;
    const int32_t id = newBlock(b);
    insertFree(id);
    return id;
}

bool AllocatorSim::mapBlock(int32_t id, int64_t size)
{
    Blk& b = m_blocks[size_t(id)];
    const Expandable& es = m_expandable[size_t(b.es)];
    const int64_t mapped = (size + es.page - 1) / es.page * es.page;
    if (!m_memory.map(mapped, m_reserved))
        return false;
    eraseFree(id);
    m_blocks[size_t(id)].mapped = true;
    if (mapped < m_blocks[size_t(id)].size) {
        Blk rest = m_blocks[size_t(id)];
        rest.ptr += uint64_t(mapped);
        rest.size -= mapped;
        rest.mapped = false;
        rest.prev = id;
        const int32_t r = newBlock(rest);
        Blk& now = m_blocks[size_t(id)];
        if (now.next != kNone)
            m_blocks[size_t(now.next)].prev = r;
        now.next = r;
        now.size = mapped;
        insertFree(r);
    }
    const uint64_t ptr = m_blocks[size_t(id)].ptr;
    const int64_t stream = m_blocks[size_t(id)].stream;
    tryMerge(id, m_blocks[size_t(id)].prev);
    tryMerge(id, m_blocks[size_t(id)].next);
    insertFree(id);
    m_reserved += mapped;
    m_events.push_back({TraceAction::SegmentMap, ptr, mapped, stream});
    return true;
}

int32_t AllocatorSim::tryAllocateExpandable(int p, int64_t size, int64_t stream)
{
    int32_t c = findExpandableBlock(p, size, stream);
    if (!m_blocks[size_t(c)].mapped && !mapBlock(c, std::min(m_blocks[size_t(c)].size, size)))
        return kNone;
    while (m_blocks[size_t(c)].size < size) {
        const int32_t next = m_blocks[size_t(c)].next;
        if (next == kNone || !mapBlock(next, std::min(size - m_blocks[size_t(c)].size, m_blocks[size_t(next)].size)))
            return kNone;
        c = next; // mapBlock merged the free block before it into `next`
    }
    eraseFree(c);
    return c;
}

int64_t AllocatorSim::tryMerge(int32_t dst, int32_t src)
{
    if (src == kNone)
        return 0;
    Blk& s = m_blocks[size_t(src)];
    Blk& d = m_blocks[size_t(dst)];
    if (s.allocated || s.mapped != d.mapped || s.pool == kNone)
        return 0;
    eraseFree(src);
    if (d.prev == src) {
        d.ptr = s.ptr;
        d.prev = s.prev;
        if (d.prev != kNone)
            m_blocks[size_t(d.prev)].next = dst;
    } else {
        d.next = s.next;
        if (d.next != kNone)
            m_blocks[size_t(d.next)].prev = dst;
    }
    const int64_t subsumed = s.size;
    d.size += subsumed;
    deleteBlock(src);
    return subsumed;
}

int32_t AllocatorSim::freeBlock(int32_t id)
{
    Blk& b = m_blocks[size_t(id)];
    b.allocated = false;
    b.requested = 0;
    const int32_t prev = b.prev, next = b.next;
    tryMerge(id, prev);
    tryMerge(id, next);
    insertFree(id);
    return id;
}

void AllocatorSim::free(int32_t id)
{
    if (id < 0 || size_t(id) >= m_blocks.size() || m_blocks[size_t(id)].dead || !m_blocks[size_t(id)].allocated)
        return;
    Blk& b = m_blocks[size_t(id)];
    m_allocated -= b.size;
    if (b.pool == kNone) { // detached: no segment to return it to
        b.allocated = false;
        deleteBlock(id);
        return;
    }
    freeBlock(id);
}

void AllocatorSim::releaseBlock(int32_t id)
{
    const Blk& b = m_blocks[size_t(id)];
    m_events.push_back({TraceAction::SegmentFree, b.ptr, b.size, b.stream});
    m_reserved -= b.size;
    eraseFree(id);
    deleteBlock(id);
}

void AllocatorSim::unmapBlock(int32_t id)
{
    Blk b = m_blocks[size_t(id)];
    const Expandable& es = m_expandable[size_t(b.es)];
    const uint64_t off = b.ptr - es.base;
    const uint64_t first = (off + uint64_t(es.page) - 1) / uint64_t(es.page) * uint64_t(es.page);
    const uint64_t last = (off + uint64_t(b.size)) / uint64_t(es.page) * uint64_t(es.page);
    if (first >= last)
        return;
    eraseFree(id);
    const uint64_t unmapAt = es.base + first;
    const auto unmapSize = int64_t(last - first);
    if (unmapAt > b.ptr) { // the free bytes before the first whole page stay mapped
        Blk before = b;
        before.size = int64_t(unmapAt - b.ptr);
        before.next = id;
        const int32_t f = newBlock(before);
        if (b.prev != kNone)
            m_blocks[size_t(b.prev)].next = f;
        m_blocks[size_t(id)].prev = f;
        insertFree(f);
    }
    const int64_t afterSize = b.size - int64_t(unmapAt - b.ptr) - unmapSize;
    if (afterSize > 0) {
        Blk after = m_blocks[size_t(id)];
        after.ptr = unmapAt + uint64_t(unmapSize);
        after.size = afterSize;
        after.prev = id;
        const int32_t a = newBlock(after);
        if (after.next != kNone)
            m_blocks[size_t(after.next)].prev = a;
        m_blocks[size_t(id)].next = a;
        insertFree(a);
    }
    Blk& now = m_blocks[size_t(id)];
    now.ptr = unmapAt;
    now.size = unmapSize;
    now.mapped = false;
    tryMerge(id, m_blocks[size_t(id)].prev);
    tryMerge(id, m_blocks[size_t(id)].next);
    insertFree(id);
    m_reserved -= unmapSize;
    m_events.push_back({TraceAction::SegmentUnmap, unmapAt, unmapSize, m_blocks[size_t(id)].stream});
}

void AllocatorSim::releaseBlocks(int p)
{
    Pool& pool = m_pools[size_t(p)];
    std::vector<int32_t> toUnmap, toRelease;
    for (const SizeKey& k : pool.blocks) {
        if (m_blocks[size_t(k.id)].es != kNone)
            toUnmap.push_back(k.id);
        else if (!isSplit(k.id))
            toRelease.push_back(k.id);
    }
    for (int32_t id : toRelease)
        releaseBlock(id);
    for (int32_t id : toUnmap) {
        if (m_blocks[size_t(id)].dead)
            continue;
        unmapBlock(id);
        if (!isSplit(id) && !m_blocks[size_t(id)].mapped) { // the whole segment is unmapped
            m_expandable[size_t(m_blocks[size_t(id)].es)].alive = false;
            eraseFree(id);
            deleteBlock(id);
        }
    }
}

void AllocatorSim::releaseCachedBlocks()
{
    // Private pools stay: their graphs may still replay.
    releaseBlocks(0);
    releaseBlocks(1);
}

void AllocatorSim::emptyCache() { releaseCachedBlocks(); }

bool AllocatorSim::releaseAvailableCachedBlocks(int p, int64_t size, int64_t stream)
{
    if (m_config.maxSplitSize == AllocatorConfig::kUnlimited)
        return false;
    Pool& pool = m_pools[size_t(p)];
    const int64_t keySize = std::max(size, m_config.maxSplitSize);
    auto it = pool.blocks.lower_bound({uint64_t(stream), keySize, 0, 0});
    auto releasable = [&](int32_t id) { return m_blocks[size_t(id)].es == kNone && !isSplit(id); };
    if (it == pool.blocks.end() || it->stream != uint64_t(stream)) {
        // No single block is large enough: free oversize blocks from the largest down.
        if (it == pool.blocks.begin())
            return false;
        --it;
        std::vector<int32_t> victims;
        int64_t released = 0;
        while (released < keySize && it->size >= m_config.maxSplitSize && it->stream == uint64_t(stream)) {
            if (releasable(it->id)) {
                victims.push_back(it->id);
                released += it->size;
            }
            if (it == pool.blocks.begin())
                break;
            --it;
        }
        for (int32_t id : victims)
            releaseBlock(id);
        return released >= keySize;
    }
    if (!releasable(it->id))
        return false;
    releaseBlock(it->id);
    return true;
}

void AllocatorSim::garbageCollect()
{
    const auto threshold = int64_t(m_config.garbageCollectionThreshold * double(m_memory.allowedMaximum()));
    if (m_reserved <= threshold)
        return;
    const int64_t target = m_reserved - threshold;
    Pool& large = m_pools[0];
    auto age = [&](int32_t id) { return large.freeBlockCalls - m_blocks[size_t(id)].gcBase; };
    auto freeable = [&](int32_t id) { return !isSplit(id) && m_blocks[size_t(id)].es == kNone; };
    int64_t totalAge = 0, count = 0;
    for (const SizeKey& k : large.blocks)
        if (freeable(k.id)) {
            totalAge += age(k.id);
            ++count;
        }
    int64_t reclaimed = 0;
    bool freed = true;
    // Blocks unused for longer than the average go first, round after round.
    while (reclaimed < target && freed && count > 0) {
        const double threshold = double(totalAge) / double(count);
        freed = false;
        std::vector<int32_t> victims;
        for (const SizeKey& k : large.blocks)
            if (freeable(k.id) && double(age(k.id)) >= threshold)
                victims.push_back(k.id);
        for (int32_t id : victims) {
            freed = true;
            reclaimed += m_blocks[size_t(id)].size;
            totalAge -= age(id);
            --count;
            releaseBlock(id);
        }
    }
}

std::vector<int32_t> AllocatorSim::addSegment(uint64_t address, int64_t stream, bool small, int privatePool,
                                              const std::vector<InitialBlock>& blocks, bool expandable)
{
    std::vector<int32_t> allocatedIds;
    const int p = poolIndex(small ? kSmallSize : kSmallSize + 1, privatePool);
    int32_t prev = kNone;
    uint64_t cursor = address;
    for (const InitialBlock& ib : blocks) {
        if (ib.size <= 0)
            continue;
        Blk b;
        b.ptr = cursor;
        b.size = ib.size;
        b.stream = stream;
        b.pool = p;
        b.prev = prev;
        b.allocated = ib.allocated;
        b.requested = ib.requested;
        const int32_t id = newBlock(b);
        if (prev != kNone)
            m_blocks[size_t(prev)].next = id;
        prev = id;
        cursor += uint64_t(ib.size);
        m_reserved += ib.size;
        if (ib.allocated) {
            m_allocated += ib.size;
            allocatedIds.push_back(id);
        }
    }
    if (expandable && prev != kNone) {
        Expandable es;
        es.base = address;
        es.size = int64_t(1) << 40;
        es.page = m_pools[size_t(p)].small ? kSmallBuffer : kLargeBuffer;
        m_expandable.push_back(es);
        for (int32_t id = prev; id != kNone; id = m_blocks[size_t(id)].prev)
            m_blocks[size_t(id)].es = int32_t(m_expandable.size() - 1);
        Blk tail;
        tail.ptr = cursor;
        tail.size = int64_t(address + uint64_t(es.size) - cursor);
        tail.stream = stream;
        tail.pool = p;
        tail.prev = prev;
        tail.es = int32_t(m_expandable.size() - 1);
        tail.mapped = false;
        const int32_t t = newBlock(tail);
        m_blocks[size_t(prev)].next = t;
        insertFree(t);
    }
    // Free blocks enter the pool once the chain is linked (their neighbours are known).
    for (int32_t id = prev; id != kNone; id = m_blocks[size_t(id)].prev)
        if (!m_blocks[size_t(id)].allocated)
            insertFree(id);
    return allocatedIds;
}

int32_t AllocatorSim::addDetached(uint64_t address, int64_t size, int64_t requested, int64_t stream)
{
    Blk b;
    b.ptr = address;
    b.size = size;
    b.requested = requested;
    b.stream = stream;
    b.allocated = true;
    m_allocated += size;
    return newBlock(b);
}

int32_t AllocatorSim::allocateAt(uint64_t address, int64_t requested, int64_t stream)
{
    const int64_t size = roundSize(requested);
    // A rare path (a divergence from the recording): a scan of the free blocks is enough.
    for (size_t p = 0; p < m_pools.size(); ++p)
        for (const SizeKey& k : m_pools[p].blocks) {
            if (k.stream != uint64_t(stream) || address < k.ptr || address + uint64_t(size) > k.ptr + uint64_t(k.size))
                continue;
            const SizeKey key = k; // erase() must not read the element it removes
            int32_t id = key.id;
            m_pools[p].blocks.erase(key);
            if (address > m_blocks[size_t(id)].ptr) {
                // The bytes before it stay cached; splitFront cached the rest, take it back.
                const int32_t before = splitFront(id, int64_t(address - m_blocks[size_t(id)].ptr));
                eraseFree(id);
                insertFree(before);
            }
            return takeBlock(id, size, requested);
        }
    return kNone;
}

bool AllocatorSim::dropFreeSegment(uint64_t address)
{
    for (Pool& pool : m_pools)
        for (const SizeKey& k : pool.blocks)
            if (k.ptr == address && m_blocks[size_t(k.id)].es == kNone && !isSplit(k.id)) {
                const int32_t id = k.id;
                m_reserved -= m_blocks[size_t(id)].size;
                eraseFree(id);
                deleteBlock(id);
                return true;
            }
    return false;
}

int64_t AllocatorSim::cachedFree() const
{
    int64_t total = 0;
    for (const Pool& p : m_pools)
        for (const SizeKey& k : p.blocks)
            total += k.size;
    return total;
}

int64_t AllocatorSim::largestFree() const
{
    int64_t best = 0;
    for (const Pool& p : m_pools)
        for (const SizeKey& k : p.blocks)
            best = std::max(best, k.size);
    return best;
}

} // namespace headroom
