// SPDX-License-Identifier: MIT
#include "core/util/downsample.h"

#include <algorithm>

namespace headroom {

template <class T>
std::vector<size_t> downsampleMinMax(const std::vector<T>& values, size_t first, size_t last, size_t buckets)
{
    std::vector<size_t> out;
    last = std::min(last, values.size());
    if (first >= last)
        return out;
    const size_t n = last - first;
    if (buckets == 0)
        buckets = 1;
    if (n <= 2 * buckets) {
        out.resize(n);
        for (size_t i = 0; i < n; ++i)
            out[i] = first + i;
        return out;
    }
    out.reserve(2 * buckets + 2);
    for (size_t b = 0; b < buckets; ++b) {
        const size_t lo = first + n * b / buckets;
        const size_t hi = first + n * (b + 1) / buckets;
        if (lo >= hi)
            continue;
        size_t iMin = lo, iMax = lo;
        for (size_t i = lo + 1; i < hi; ++i) {
            if (values[i] < values[iMin]) iMin = i;
            if (values[i] > values[iMax]) iMax = i;
        }
        if (iMin == iMax) {
            out.push_back(iMin);
        } else {
            out.push_back(std::min(iMin, iMax));
            out.push_back(std::max(iMin, iMax));
        }
    }
    if (out.back() != last - 1)
        out.push_back(last - 1);
    return out;
}

template std::vector<size_t> downsampleMinMax(const std::vector<int64_t>&, size_t, size_t, size_t);
template std::vector<size_t> downsampleMinMax(const std::vector<float>&, size_t, size_t, size_t);

} // namespace headroom
