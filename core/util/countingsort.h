// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// Sorts `items` by `keyOf(item)`, stably, when the keys are event indices: small integers
/// in [0, keyLimit). A counting sort, one pass to count and one to place, instead of
/// std::stable_sort's n log n comparisons: the live-set index and the stacked category
/// series sort a million allocation ends this way on every load (a third of the analysis
/// before). Keys outside [0, keyLimit), or a limit far above the item count (the count array
/// would cost more than it saves), fall back to std::stable_sort; the order is the same.
template <typename T, typename KeyOf>
void countingSortByKey(std::vector<T>& items, int64_t keyLimit, KeyOf keyOf)
{
    const size_t n = items.size();
    if (n < 2)
        return;
    const auto byKey = [&](const T& x, const T& y) { return keyOf(x) < keyOf(y); };
    bool inRange = keyLimit > 0 && static_cast<uint64_t>(keyLimit) <= 4 * uint64_t(n) + 1024;
    bool sorted = true;
    for (size_t i = 0; i < n && inRange; ++i) {
        const int64_t k = keyOf(items[i]);
        inRange = k >= 0 && k < keyLimit;
        sorted = sorted && (i == 0 || keyOf(items[i - 1]) <= k);
    }
    if (inRange && sorted)
        return;
    if (!inRange) {
        std::stable_sort(items.begin(), items.end(), byKey);
        return;
    }
    std::vector<uint32_t> start(static_cast<size_t>(keyLimit) + 1, 0);
    for (const T& item : items)
        ++start[static_cast<size_t>(keyOf(item)) + 1];
    for (size_t k = 1; k < start.size(); ++k)
        start[k] += start[k - 1];
    std::vector<T> out(n);
    for (const T& item : items)
        out[start[static_cast<size_t>(keyOf(item))]++] = item;
    items.swap(out);
}

} // namespace headroom
