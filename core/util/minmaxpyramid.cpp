// SPDX-License-Identifier: MIT
#include "core/util/minmaxpyramid.h"

#include "core/util/downsample.h"

#include <algorithm>

namespace headroom {

template <class T>
MinMaxPyramid::MinMaxPyramid(const std::vector<T>& values)
    : m_size(values.size())
{
    if (values.size() >= UINT32_MAX)
        return; // indices would not fit: downsample() falls back to a full pass
    const std::vector<T>& v = values;
    size_t block = 8;
    for (int l = 0; l < 5 && block <= values.size(); ++l, block *= 8) {
        Level level;
        level.block = block;
        const size_t count = (values.size() + block - 1) / block;
        level.minIndex.resize(count);
        level.maxIndex.resize(count);
        for (size_t b = 0; b < count; ++b) {
            size_t iMin = b * block, iMax = iMin;
            if (m_levels.empty()) {
                const size_t end = std::min(values.size(), (b + 1) * block);
                for (size_t i = iMin + 1; i < end; ++i) {
                    if (v[i] < v[iMin]) iMin = i;
                    if (v[i] > v[iMax]) iMax = i;
                }
            } else { // eight blocks of the level below
                const Level& below = m_levels.back();
                const size_t from = b * 8, to = std::min(below.minIndex.size(), from + 8);
                iMin = below.minIndex[from];
                iMax = below.maxIndex[from];
                for (size_t k = from + 1; k < to; ++k) {
                    if (v[below.minIndex[k]] < v[iMin]) iMin = below.minIndex[k];
                    if (v[below.maxIndex[k]] > v[iMax]) iMax = below.maxIndex[k];
                }
            }
            level.minIndex[b] = static_cast<uint32_t>(iMin);
            level.maxIndex[b] = static_cast<uint32_t>(iMax);
        }
        m_levels.push_back(std::move(level));
    }
}

template <class T>
void MinMaxPyramid::minMax(const std::vector<T>& v, size_t lo, size_t hi, size_t& iMin, size_t& iMax) const
{
    iMin = iMax = lo;
    auto take = [&](size_t a, size_t b) { // indices of a min and a max candidate
        if (v[a] < v[iMin] || (v[a] == v[iMin] && a < iMin)) iMin = a;
        if (v[b] > v[iMax] || (v[b] == v[iMax] && b < iMax)) iMax = b;
    };
    size_t i = lo;
    while (i < hi) {
        // The largest block that starts at i and ends by hi.
        const Level* use = nullptr;
        for (const Level& l : m_levels)
            if (i % l.block == 0 && i + l.block <= hi)
                use = &l;
        if (use) {
            take(use->minIndex[i / use->block], use->maxIndex[i / use->block]);
            i += use->block;
        } else {
            take(i, i);
            ++i;
        }
    }
}

template <class T>
std::vector<size_t> MinMaxPyramid::downsample(const std::vector<T>& values, size_t first, size_t last,
                                              size_t buckets) const
{
    last = std::min(last, values.size());
    if (m_levels.empty() || values.size() != m_size || first >= last || buckets == 0 || last - first <= 2 * buckets)
        return downsampleMinMax(values, first, last, buckets);
    const size_t n = last - first;
    // Align bucket boundaries to the largest block within a quarter of a bucket.
    size_t align = 1;
    for (const Level& l : m_levels)
        if (l.block * 4 <= n / buckets)
            align = l.block;
    std::vector<size_t> out;
    out.reserve(2 * buckets + 2);
    size_t lo = first;
    for (size_t b = 0; b < buckets && lo < last; ++b) {
        size_t hi = b + 1 == buckets ? last : first + n * (b + 1) / buckets;
        hi = std::min(last, std::max(lo + 1, hi / align * align));
        size_t iMin = lo, iMax = lo;
        minMax(values, lo, hi, iMin, iMax);
        if (iMin == iMax) {
            out.push_back(iMin);
        } else {
            out.push_back(std::min(iMin, iMax));
            out.push_back(std::max(iMin, iMax));
        }
        lo = hi;
    }
    if (out.back() != last - 1)
        out.push_back(last - 1);
    return out;
}

template MinMaxPyramid::MinMaxPyramid(const std::vector<int64_t>&);
template MinMaxPyramid::MinMaxPyramid(const std::vector<float>&);
template std::vector<size_t> MinMaxPyramid::downsample(const std::vector<int64_t>&, size_t, size_t, size_t) const;
template std::vector<size_t> MinMaxPyramid::downsample(const std::vector<float>&, size_t, size_t, size_t) const;
template void MinMaxPyramid::minMax(const std::vector<int64_t>&, size_t, size_t, size_t&, size_t&) const;
template void MinMaxPyramid::minMax(const std::vector<float>&, size_t, size_t, size_t&, size_t&) const;

} // namespace headroom
