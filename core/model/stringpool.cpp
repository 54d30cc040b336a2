// SPDX-License-Identifier: MIT
#include "core/model/stringpool.h"

namespace headroom {

StringPool::StringPool()
{
    intern("");
}

uint32_t StringPool::intern(std::string_view s)
{
    if (auto it = m_index.find(s); it != m_index.end())
        return it->second;
    const auto id = static_cast<uint32_t>(m_strings.size());
    m_strings.emplace_back(s);
    m_index.emplace(std::string_view(m_strings.back()), id);
    return id;
}

} // namespace headroom
