// SPDX-License-Identifier: MIT
#include "core/whatif/lawlinks.h"

#include <algorithm>
#include <numeric>

namespace headroom {

namespace {

/// Union-find over allocation indices, path halving.
class Classes {
public:
    explicit Classes(size_t n) : m_parent(n) { std::iota(m_parent.begin(), m_parent.end(), size_t(0)); }
    size_t root(size_t i)
    {
        while (m_parent[i] != i)
            i = m_parent[i] = m_parent[m_parent[i]];
        return i;
    }
    void join(size_t a, size_t b) { m_parent[root(a)] = root(b); }

private:
    std::vector<size_t> m_parent;
};

/// Allocation index made at each event, sorted by event.
std::vector<std::pair<int64_t, size_t>> allocationsByEvent(const std::vector<Allocation>& allocations)
{
    std::vector<std::pair<int64_t, size_t>> out;
    out.reserve(allocations.size());
    for (size_t i = 0; i < allocations.size(); ++i)
        if (allocations[i].start >= 0)
            out.emplace_back(allocations[i].start, i);
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

std::vector<std::vector<size_t>> likeClasses(const std::vector<Allocation>& allocations,
                                             const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors)
{
    const auto byEvent = allocationsByEvent(allocations);
    auto at = [&](int64_t event) -> int64_t {
        const auto it = std::lower_bound(byEvent.begin(), byEvent.end(), std::pair<int64_t, size_t>{event, 0});
        return it != byEvent.end() && it->first == event ? int64_t(it->second) : -1;
    };
    Classes classes(allocations.size());
    std::vector<uint8_t> linked(allocations.size(), 0);
    for (const auto& [event, t] : tensors) {
        if (t.like.empty())
            continue;
        const int64_t i = at(event);
        for (uint32_t back : t.like) {
            const int64_t j = back <= event ? at(int64_t(event) - back) : -1;
            if (i < 0 || j < 0)
                continue;
            classes.join(size_t(i), size_t(j));
            linked[size_t(i)] = linked[size_t(j)] = 1;
        }
    }
    std::vector<std::vector<size_t>> out;
    std::vector<int64_t> slot(allocations.size(), -1);
    for (size_t i = 0; i < allocations.size(); ++i) {
        if (!linked[i])
            continue;
        int64_t& s = slot[classes.root(i)];
        if (s < 0) {
            s = int64_t(out.size());
            out.emplace_back();
        }
        out[size_t(s)].push_back(i);
    }
    return out;
}

} // namespace headroom
