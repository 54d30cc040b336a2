// SPDX-License-Identifier: MIT
#pragma once

// ASCII text tests the readers and the analysis share: settings and frame names are ASCII.

#include <cctype>
#include <string>
#include <string_view>

namespace headroom {

inline bool endsWith(std::string_view s, std::string_view tail)
{
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

inline std::string asciiLower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// A setting's "true" or "1", in any case, trailing spaces ignored.
inline bool truthy(std::string_view v)
{
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())))
        v.remove_suffix(1);
    const std::string l = asciiLower(v);
    return l == "true" || l == "1";
}

} // namespace headroom
