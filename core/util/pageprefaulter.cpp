// SPDX-License-Identifier: MIT
#include "core/util/pageprefaulter.h"

#include <algorithm>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace headroom {

PagePrefaulter::PagePrefaulter(size_t leadBytes)
    : m_lead(leadBytes), m_regions(std::make_unique<Region[]>(kMaxRegions))
{
}

PagePrefaulter::~PagePrefaulter()
{
    if (m_thread.joinable()) {
        m_stop.store(true);
        m_epoch.fetch_add(1);
        m_epoch.notify_one();
        m_thread.join();
    }
}

size_t PagePrefaulter::track(const void* base, size_t capacityBytes, Access access, size_t lead)
{
    if (m_count == kMaxRegions || m_thread.joinable())
        return kMaxRegions;
    Region& r = m_regions[m_count];
    r.base = static_cast<const uint8_t*>(base);
    r.capacity = capacityBytes;
    r.access = access;
    r.lead = lead != 0 ? lead : m_lead;
    return m_count++;
}

void PagePrefaulter::start()
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    if (m_count > 0)
        m_thread = std::thread([this] { loop(); });
#endif
}

void PagePrefaulter::advance(size_t r, const void* base, size_t usedBytes)
{
    if (r >= m_count)
        return;
    Region& reg = m_regions[r];
    if (base != reg.base)
        reg.retired.store(true, std::memory_order_relaxed);
    reg.used.store(usedBytes, std::memory_order_relaxed);
}

void PagePrefaulter::notify()
{
    if (!m_thread.joinable())
        return;
    m_epoch.fetch_add(1, std::memory_order_release);
    m_epoch.notify_one();
}

void PagePrefaulter::loop()
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uint32_t seen = m_epoch.load(std::memory_order_acquire);
    while (!m_stop.load(std::memory_order_relaxed)) {
        bool worked = false;
        for (size_t i = 0; i < m_count && !m_stop.load(std::memory_order_relaxed); ++i) {
            Region& r = m_regions[i];
            if (r.retired.load(std::memory_order_relaxed))
                continue;
            const size_t used = r.used.load(std::memory_order_relaxed);
            // Behind the writer there is nothing to gain (and a read region's pages there
            // have been released): a helper that fell behind skips ahead.
            r.populated = std::max(r.populated, used);
            const size_t target = std::min(r.capacity, used + r.lead);
            // In steps of half the lead, not a syscall per checkpoint.
            if (target <= r.populated || (target < r.capacity && target < r.populated + r.lead / 2))
                continue;
            // Page-aligned bounds; the pages at the edges may hold other data (the malloc
            // header, a neighbour): populating them changes nothing.
            const uintptr_t from = reinterpret_cast<uintptr_t>(r.base + r.populated) / page * page;
            const uintptr_t to = (reinterpret_cast<uintptr_t>(r.base + target) + page - 1) / page * page;
            const int advice = r.access == Access::Write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;
            if (::madvise(reinterpret_cast<void*>(from), to - from, advice) != 0)
                r.retired.store(true, std::memory_order_relaxed); // refused or unmapped: stop here
            r.populated = target;
            worked = true;
        }
        if (!worked) {
            m_epoch.wait(seen, std::memory_order_acquire);
            seen = m_epoch.load(std::memory_order_acquire);
        }
    }
#endif
}

} // namespace headroom
