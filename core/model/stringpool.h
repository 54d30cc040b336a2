// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace headroom {

/// Interned, immutable strings addressed by a dense 32-bit id. Id 0 is "".
class StringPool {
public:
    StringPool();
    StringPool(const StringPool&) = delete;
    StringPool& operator=(const StringPool&) = delete;
    StringPool(StringPool&&) noexcept = default;
    StringPool& operator=(StringPool&&) noexcept = default;

    uint32_t intern(std::string_view s);
    std::string_view get(uint32_t id) const { return m_strings[id]; }
    uint32_t size() const { return static_cast<uint32_t>(m_strings.size()); }

private:
    std::deque<std::string> m_strings; // deque: references stay valid as it grows
    std::unordered_map<std::string_view, uint32_t> m_index;
};

} // namespace headroom
