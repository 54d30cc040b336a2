// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace headroom {

/// Where `p[0..n)` stops being well-formed UTF-8 (RFC 3629: no overlongs, no surrogates,
/// nothing past U+10FFFF), or `n` when it is all valid. Strings read from a file must pass
/// this before they reach the model: nlohmann::json (the CLI's JSON output, the analysis
/// report) throws on invalid UTF-8, and Python's own unpickler refuses it too.
inline size_t utf8InvalidAt(const uint8_t* p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (n - i >= 8) { // ASCII fast path, 8 bytes at a time
            uint64_t w;
            std::memcpy(&w, p + i, 8);
            if ((w & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        const uint8_t c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint8_t lo = 0x80, hi = 0xBF; // allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) { len = 3; lo = 0xA0; }
        else if (c == 0xED) { len = 3; hi = 0x9F; }
        else if (c >= 0xE1 && c <= 0xEF) len = 3;
        else if (c == 0xF0) { len = 4; lo = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else if (c == 0xF4) { len = 4; hi = 0x8F; }
        else return i;
        if (n - i < len || p[i + 1] < lo || p[i + 1] > hi)
            return i;
        for (size_t k = 2; k < len; ++k)
            if ((p[i + k] & 0xC0) != 0x80)
                return i;
        i += len;
    }
    return n;
}

} // namespace headroom
