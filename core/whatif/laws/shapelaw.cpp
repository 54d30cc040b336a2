// SPDX-License-Identifier: MIT
#include "core/whatif/laws/shapelaw.h"

#include "core/model/recordedtensors.h"

#include <algorithm>
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

/// What one marked dimension may contribute to b's and s's exponents: each of the set options.
struct Mark {
    bool b = false, s = false, none = false;
    bool both = false; ///< a flattened b*s dimension: b and s at once
};

/// Every (b, s) exponent pair the marks can sum to: bit s of row b.
std::array<uint32_t, 33> exponentSums(const std::vector<Mark>& marks)
{
    std::array<uint32_t, 33> reach{};
    reach[0] = 1;
    for (const Mark& m : marks) {
        std::array<uint32_t, 33> next{};
        for (size_t eb = 0; eb < reach.size(); ++eb) {
            if (!reach[eb])
                continue;
            if (m.none)
                next[eb] |= reach[eb];
            if (m.s)
                next[eb] |= reach[eb] << 1;
            if ((m.b || m.both) && eb + 1 < next.size())
                next[eb + 1] |= m.both ? reach[eb] << 1 : reach[eb];
        }
        reach = next;
    }
    return reach;
}

} // namespace

MarkCoincidence markCoincidence(const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int b0, int s0)
{
    MarkCoincidence c;
    for (const auto& [event, t] : tensors) {
        if (t.kind == RecordedTensor::Kind::Parameter || t.shape.empty() || !lastDimIsWeightWidth(t, event, tensors))
            continue;
        c.batch |= b0 > 1 && t.shape.back() == b0;
        c.seq |= s0 > 1 && t.shape.back() == s0;
    }
    return c;
}

uint8_t shapeLaws(const RecordedTensor& t, int b0, int s0, MarkCoincidence coincident)
{
    std::vector<Mark> marks;
    for (size_t d = 0; d < t.shape.size() && d < 32; ++d) {
        const bool b = t.batchDims & (1u << d), s = t.seqDims & (1u << d);
        if (b || s)
            marks.push_back({b, s, (b && coincident.batch) || (s && coincident.seq)});
    }
    // Without a mark, a dimension of b0*s0 is a flattened [b*s, d] (with marks it is more
    // likely a width that equals it).
    for (size_t d = 0; marks.empty() && d < t.shape.size(); ++d)
        if (b0 > 1 && s0 > 1 && t.shape[d] == int64_t(b0) * s0)
            marks.push_back({false, false, false, true});
    const size_t n = marks.size();
    if (n == 0 || n > 12)
        return 0;
    const auto reach = exponentSums(marks);
    uint8_t found = 0;
    for (int eb = 0; eb <= 2; ++eb)
        for (int es = 0; es <= 2; ++es)
            if ((reach[size_t(eb)] >> unsigned(es)) & 1u)
                if (const int l = lawOf(eb, es); l >= 0)
                    found |= uint8_t(1u << unsigned(l));
    return found;
}

bool lastDimIsWeightWidth(const RecordedTensor& t, uint32_t event,
                          const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors)
{
    if (t.shape.empty())
        return false;
    const int64_t width = t.shape.back();
    for (const uint32_t back : t.inputs) {
        const RecordedTensor* in = back <= event ? recordedTensorAt(tensors, int64_t(event) - back) : nullptr;
        // A matrix or a vector (a Linear's or an embedding's weight, a bias, a norm's scale):
        // an output's last dimension of its size is that width. A convolution's weight is
        // not: its output's last dimension is the image's.
        if (in && in->kind == RecordedTensor::Kind::Parameter && in->shape.size() <= 2 &&
            std::find(in->shape.begin(), in->shape.end(), width) != in->shape.end())
            return true;
    }
    return false;
}

int weightWidthDim(const RecordedTensor& t, uint32_t event,
                   const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int b0, int s0,
                   MarkCoincidence coincident)
{
    if (t.shape.empty() || t.shape.size() > 32)
        return -1;
    const size_t last = t.shape.size() - 1;
    const int64_t width = t.shape[last];
    const bool marked = ((t.seqDims >> last) & 1u) || ((t.batchDims >> last) & 1u);
    const bool coincides = (coincident.seq && width == s0) || (coincident.batch && width == b0);
    return marked && coincides && lastDimIsWeightWidth(t, event, tensors) ? int(last) : -1;
}

uint8_t shapeLawsWithWidth(const RecordedTensor& t, int b0, int s0, int dim)
{
    RecordedTensor w = t;
    w.seqDims &= ~(1u << unsigned(dim));
    w.batchDims &= ~(1u << unsigned(dim));
    return shapeLaws(w, b0, s0);
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
