// SPDX-License-Identifier: MIT
#include "core/whatif/laws/shapelaw.h"

#include <array>
#include <bit>
#include <vector>

namespace headroom {

namespace {

/// The law of b^eb * s^es; -1 when the replay has none.
int lawOf(int eb, int es)
{
    if (eb == 0 && es == 0) return int(SizeLaw::Constant);
    if (eb == 1 && es == 0) return int(SizeLaw::Batch);
    if (eb == 0 && es == 1) return int(SizeLaw::Sequence);
    if (eb == 1 && es == 1) return int(SizeLaw::Tokens);
    if (eb == 1 && es == 2) return int(SizeLaw::TokensBySeq);
    if (eb == 0 && es == 2) return int(SizeLaw::SeqSquared);
    return -1;
}

/// A marked dimension: what it contributes to b's and s's exponents, or either (b0 == s0).
struct Mark {
    int eb = 0, es = 0;
    bool either = false;
};

} // namespace

uint8_t shapeLaws(const RecordedTensor& t, int b0, int s0)
{
    std::vector<Mark> marks;
    for (size_t d = 0; d < t.shape.size() && d < 32; ++d) {
        const bool b = t.batchDims & (1u << d), s = t.seqDims & (1u << d);
        if (b && s)
            marks.push_back({1, 0, true});
        else if (b)
            marks.push_back({1, 0, false});
        else if (s)
            marks.push_back({0, 1, false});
    }
    // Without a mark, a dimension of b0*s0 is a flattened [b*s, d] (with marks it is more
    // likely a width that equals it).
    for (size_t d = 0; marks.empty() && d < t.shape.size(); ++d)
        if (b0 > 1 && s0 > 1 && t.shape[d] == int64_t(b0) * s0)
            marks.push_back({1, 1, false});
    const size_t n = marks.size();
    if (n == 0 || n > 12)
        return 0;
    // Every mark as the recorder set it; each "either" mark is b or s: every assignment.
    int eb = 0, es = 0;
    size_t either = 0;
    for (const Mark& m : marks) {
        if (m.either)
            ++either;
        else
            eb += m.eb, es += m.es;
    }
    uint8_t found = 0;
    for (uint32_t asB = 0; asB < (1u << either); ++asB) {
        const int nb = std::popcount(asB);
        if (const int l = lawOf(eb + nb, es + int(either) - nb); l >= 0)
            found |= uint8_t(1u << unsigned(l));
    }
    return found;
}

uint32_t offsetDims(const RecordedTensor& t, int s0, int c)
{
    uint32_t dims = 0;
    for (size_t d = 0; d < t.shape.size() && d < 32; ++d)
        if (t.shape[d] == int64_t(s0) + c)
            dims |= 1u << d;
    return dims;
}

int shapeTokenOffset(const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int s0)
{
    using K = RecordedTensor::Kind;
    std::array<int, kMaxShapeOffset + 1> votes{};
    for (const auto& [event, t] : tensors) {
        if (t.kind != K::Activation && t.kind != K::Temporary && t.kind != K::Unknown)
            continue;
        for (int c = 1; c <= kMaxShapeOffset; ++c)
            if (std::popcount(offsetDims(t, s0, c)) == 2)
                ++votes[size_t(c)];
    }
    int best = 0;
    for (int c = 1; c <= kMaxShapeOffset; ++c)
        if (votes[size_t(c)] > votes[size_t(best)])
            best = c;
    return best;
}

uint8_t offsetShapeLaws(const RecordedTensor& t, int b0, int s0, int c)
{
    RecordedTensor over = t;
    over.seqDims = offsetDims(t, s0, c);
    over.batchDims &= ~over.seqDims;
    return shapeLaws(over, b0, s0);
}

} // namespace headroom
