// SPDX-License-Identifier: MIT
#include "core/analysis/factoredstate.h"
#include "core/replay/allocatorconstants.h"

#include <functional>
#include <numeric>

namespace headroom {

namespace {

int64_t blockOf(int64_t elements, int64_t elementBytes)
{
    const int64_t bytes = std::max<int64_t>(elements * elementBytes, 1);
    return (bytes + allocator::kMinBlock - 1) / allocator::kMinBlock * allocator::kMinBlock;
}

int64_t product(std::vector<int64_t>::const_iterator from, std::vector<int64_t>::const_iterator to)
{
    return std::accumulate(from, to, int64_t(1), std::multiplies<int64_t>());
}

} // namespace

std::map<int64_t, int64_t> predictFactoredState(const std::vector<ShapedGradient>& gradients)
{
    std::map<int64_t, int64_t> out;
    for (const auto& [full, elementBytes] : gradients) {
        auto first = full.begin();
        while (full.end() - first > 1 && *first == 1)
            ++first;
        const std::vector<int64_t> s(first, full.end());
        if (s.size() >= 2) {
            ++out[blockOf(product(s.begin(), s.end() - 1), elementBytes)];
            ++out[blockOf(product(s.begin(), s.end() - 2) * s.back(), elementBytes)];
        } else {
            ++out[blockOf(product(s.begin(), s.end()), elementBytes)];
        }
    }
    return out;
}

int64_t dtypeElementBytes(std::string_view d)
{
    if (d.starts_with("torch."))
        d.remove_prefix(6);
    if (d == "float32" || d == "float" || d == "int32")
        return 4;
    if (d == "bfloat16" || d == "float16" || d == "half")
        return 2;
    if (d == "float64" || d == "double" || d == "int64")
        return 8;
    return 0;
}

} // namespace headroom
