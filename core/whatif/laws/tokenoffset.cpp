// SPDX-License-Identifier: MIT
#include "core/whatif/laws/tokenoffset.h"

#include "core/whatif/laws/shapelaw.h"
#include "core/whatif/laws/sizelaw.h"

#include <array>

namespace headroom {

namespace {

bool scoresOver(int64_t size, int64_t unit, int64_t unit0)
{
    return fitsUnit(size, unit) && (size / unit) % 2 == 0 && !fitsUnit(size, unit0);
}

/// Of the candidates that are not scores at this c, whether b0*(s0+c) divides half the bytes.
/// A layer's activation (tokens x width x 2 or 4 bytes) is a multiple of 512 B as it is.
bool tokensAgree(const std::vector<int64_t>& candidates, int64_t unit, int64_t tokens, int64_t unit0)
{
    int64_t agree = 0, all = 0;
    for (int64_t z : candidates) {
        if (scoresOver(z, unit, unit0))
            continue;
        all += z;
        agree += z % tokens == 0 ? z : 0; // exact: b0*(s0+c) may be below the 512 B rounding
    }
    return all > 0 && 2 * agree >= all;
}

} // namespace

SizeTokenOffset sizeTokenOffset(const std::vector<int64_t>& candidates, int b0, int s0)
{
    SizeTokenOffset out;
    if (b0 <= 0 || s0 <= 1 || candidates.empty())
        return out;
    const int64_t unit0 = int64_t(b0) * s0 * s0;
    auto unitOf = [&](int c) { return int64_t(b0) * (s0 + c) * (s0 + c); };
    std::array<int64_t, kMaxShapeOffset + 1> bytes{};
    std::array<size_t, kMaxShapeOffset + 1> count{};
    for (int c = 1; c <= kMaxShapeOffset; ++c) {
        for (int64_t z : candidates)
            if (scoresOver(z, unitOf(c), unit0)) {
                bytes[size_t(c)] += z;
                ++count[size_t(c)];
            }
    }
    int best = 0;
    for (int c = 1; c <= kMaxShapeOffset; ++c)
        if (bytes[size_t(c)] > bytes[size_t(best)])
            best = c;
    if (best == 0 || count[size_t(best)] < 2)
        return out;
    for (int c = 1; c <= kMaxShapeOffset; ++c)
        if (c != best && 2 * bytes[size_t(c)] > bytes[size_t(best)])
            return out;
    if (!tokensAgree(candidates, unitOf(best), int64_t(b0) * (s0 + best), unit0))
        return out;
    out.offset = best;
    for (size_t i = 0; i < candidates.size(); ++i)
        if (scoresOver(candidates[i], unitOf(best), unit0)) {
            out.scores.push_back(i);
            out.bytes += candidates[i];
        }
    return out;
}

} // namespace headroom
