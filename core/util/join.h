// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// "a, b, c": the items of a list for a message.
inline std::string joinWith(const std::vector<std::string>& items, std::string_view separator = ", ")
{
    std::string s;
    for (const std::string& x : items) {
        if (!s.empty())
            s += separator;
        s += x;
    }
    return s;
}

} // namespace headroom
