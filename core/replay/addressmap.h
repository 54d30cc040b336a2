// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// Open-addressing hash map from a device address to a 32-bit value, with linear probing
/// and backward-shift deletion (no tombstones). Replay inserts and erases once per
/// alloc/free, millions of times: this is several times faster than std::unordered_map.
/// At most half full: linear probing's misses (every new address) get long past that.
class AddressMap {
public:
    static constexpr uint32_t kMissing = 0xffffffffu;

    explicit AddressMap(size_t expected = 1024) { rehash(capacityFor(expected)); }

    uint32_t find(uint64_t key) const
    {
        for (size_t i = slot(key);; i = (i + 1) & m_mask) {
            if (!m_used[i])
                return kMissing;
            if (m_keys[i] == key)
                return m_values[i];
        }
    }

    /// Inserts or overwrites.
    void set(uint64_t key, uint32_t value)
    {
        if ((m_size + 1) * 2 > m_keys.size())
            rehash(m_keys.size() * 2);
        for (size_t i = slot(key);; i = (i + 1) & m_mask) {
            if (!m_used[i]) {
                m_used[i] = 1;
                m_keys[i] = key;
                m_values[i] = value;
                ++m_size;
                return;
            }
            if (m_keys[i] == key) {
                m_values[i] = value;
                return;
            }
        }
    }

    bool erase(uint64_t key)
    {
        size_t i = slot(key);
        for (;; i = (i + 1) & m_mask) {
            if (!m_used[i])
                return false;
            if (m_keys[i] == key)
                break;
        }
        // Backward-shift: move later entries of the cluster into the hole when allowed.
        size_t hole = i;
        for (size_t j = (i + 1) & m_mask; m_used[j]; j = (j + 1) & m_mask) {
            const size_t home = slot(m_keys[j]);
            const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
            if (movable) {
                m_keys[hole] = m_keys[j];
                m_values[hole] = m_values[j];
                hole = j;
            }
        }
        m_used[hole] = 0;
        --m_size;
        return true;
    }

    size_t size() const { return m_size; }

private:
    static size_t capacityFor(size_t n)
    {
        size_t c = 16;
        while (c < n * 2)
            c *= 2;
        return c;
    }
    size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> 20) & m_mask; }
    void rehash(size_t capacity)
    {
        std::vector<uint64_t> keys = std::move(m_keys);
        std::vector<uint32_t> values = std::move(m_values);
        std::vector<uint8_t> used = std::move(m_used);
        m_keys.assign(capacity, 0);
        m_values.assign(capacity, 0);
        m_used.assign(capacity, 0);
        m_mask = capacity - 1;
        m_size = 0;
        for (size_t i = 0; i < used.size(); ++i)
            if (used[i])
                set(keys[i], values[i]);
    }

    std::vector<uint64_t> m_keys;
    std::vector<uint32_t> m_values;
    std::vector<uint8_t> m_used;
    size_t m_mask = 0;
    size_t m_size = 0;
};

} // namespace headroom
