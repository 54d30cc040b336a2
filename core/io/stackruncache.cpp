// SPDX-License-Identifier: MIT
#include "core/io/stackruncache.h"

#include <cstring>

namespace headroom {

namespace {

// Distinct runs kept: 16 MiB of pickle bytes and a million runs at most, so a file made of
// nothing but distinct short lists cannot grow the cache past a few tens of MiB.
constexpr size_t kMaxBytes = size_t(16) << 20;
constexpr size_t kMaxEntries = size_t(1) << 20;

} // namespace

uint64_t StackRunCache::hashRun(const uint8_t* p, size_t n)
{
    // Eight bytes at a time in two independent lanes; the tail is padded with zeros and
    // the length mixed in, so runs that differ only in trailing zero bytes still differ.
    uint64_t a = 0x243f6a8885a308d3ull ^ n, b = 0x13198a2e03707344ull;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint64_t x, y;
        std::memcpy(&x, p + i, 8);
        std::memcpy(&y, p + i + 8, 8);
        a = (a ^ x) * 0x9e3779b97f4a7c15ull;
        b = (b ^ y) * 0xff51afd7ed558ccdull;
    }
    for (; i < n; i += 8) {
        uint64_t x = 0;
        std::memcpy(&x, p + i, n - i < 8 ? n - i : 8);
        a = (a ^ x) * 0x9e3779b97f4a7c15ull;
    }
    a ^= b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2);
    return a * 0xc4ceb9fe1a85ec53ull;
}

uint32_t StackRunCache::find(const uint8_t* p, size_t n, uint64_t h) const
{
    if (m_slots.empty())
        return kMissing;
    const size_t mask = m_slots.size() - 1;
    for (size_t i = static_cast<size_t>(h >> 24) & mask; m_slots[i] != 0; i = (i + 1) & mask) {
        const Entry& e = m_entries[m_slots[i] - 1];
        if (e.hash == h && e.length == n && std::memcmp(m_bytes.data() + e.offset, p, n) == 0)
            return e.stack;
    }
    return kMissing;
}

void StackRunCache::insert(const uint8_t* p, size_t n, uint64_t h, uint32_t stack)
{
    if (m_bytes.size() + n > kMaxBytes || m_entries.size() >= kMaxEntries)
        return;
    if ((m_entries.size() + 1) * 2 > m_slots.size())
        grow();
    const size_t mask = m_slots.size() - 1;
    size_t i = static_cast<size_t>(h >> 24) & mask;
    while (m_slots[i] != 0)
        i = (i + 1) & mask;
    m_entries.push_back({h, m_bytes.size(), static_cast<uint32_t>(n), stack});
    m_bytes.insert(m_bytes.end(), p, p + n);
    m_slots[i] = static_cast<uint32_t>(m_entries.size());
}

void StackRunCache::grow()
{
    m_slots.assign(m_slots.empty() ? 256 : m_slots.size() * 2, 0);
    const size_t mask = m_slots.size() - 1;
    for (size_t k = 0; k < m_entries.size(); ++k) {
        size_t i = static_cast<size_t>(m_entries[k].hash >> 24) & mask;
        while (m_slots[i] != 0)
            i = (i + 1) & mask;
        m_slots[i] = static_cast<uint32_t>(k + 1);
    }
}

void StackRunCache::clear()
{
    m_entries.clear();
    m_slots.clear();
    m_bytes.clear();
}

} // namespace headroom
