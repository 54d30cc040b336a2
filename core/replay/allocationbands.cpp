// SPDX-License-Identifier: MIT
#include "core/replay/allocationbands.h"

#include <algorithm>

namespace headroom {

namespace {

/// Stacking order: allocations from before the window first, then by birth.
bool stackedBefore(const std::vector<Allocation>& a, uint32_t x, uint32_t y)
{
    return a[x].start != a[y].start ? a[x].start < a[y].start : x < y;
}

} // namespace

AllocationBands::AllocationBands(const MemoryTimeline& tl, size_t maxBands)
{
    const auto& allocs = tl.allocations;
    if (allocs.empty() || maxBands == 0) {
        m_threshold = INT64_MAX;
        return;
    }
    std::vector<uint32_t> order(allocs.size());
    for (uint32_t i = 0; i < order.size(); ++i)
        order[i] = i;
    const size_t keep = std::min(maxBands, order.size());
    std::nth_element(order.begin(), order.begin() + ptrdiff_t(keep - 1), order.end(), [&](uint32_t x, uint32_t y) {
        return allocs[x].size != allocs[y].size ? allocs[x].size > allocs[y].size : x < y;
    });
    order.resize(keep);
    m_threshold = allocs[order.back()].size;
    for (uint32_t i : order)
        m_threshold = std::min(m_threshold, allocs[i].size);
    m_byStart = order;
    std::sort(m_byStart.begin(), m_byStart.end(), [&](uint32_t x, uint32_t y) { return stackedBefore(allocs, x, y); });
    for (uint32_t i : order)
        if (allocs[i].end != Allocation::kStillAlive)
            m_byEnd.push_back(i);
    std::sort(m_byEnd.begin(), m_byEnd.end(), [&](uint32_t x, uint32_t y) { return allocs[x].end < allocs[y].end; });
}

BandColumns AllocationBands::layout(const MemoryTimeline& tl, const std::vector<int64_t>& bounds) const
{
    BandColumns out;
    if (bounds.size() < 2)
        return out;
    const auto& allocs = tl.allocations;
    const auto n = static_cast<int64_t>(tl.allocated.size());
    auto allocatedAt = [&](int64_t e) { return e < 0 ? tl.initialAllocated : tl.allocated[size_t(e)]; };
    const size_t columns = bounds.size() - 1;
    out.events.resize(columns);
    for (size_t c = 0; c < columns; ++c) {
        const int64_t first = std::clamp<int64_t>(bounds[c], 0, n);
        const int64_t last = std::clamp<int64_t>(bounds[c + 1], first, n);
        int64_t best = first - 1; // an empty column holds the state after the previous event
        if (last > first) {
            best = first;
            for (int64_t e = first + 1; e < last; ++e)
                if (tl.allocated[size_t(e)] > tl.allocated[size_t(best)])
                    best = e;
        }
        out.events[c] = std::min(best, n - 1);
    }

    auto less = [&](uint32_t x, uint32_t y) { return stackedBefore(allocs, x, y); };
    std::vector<uint32_t> live; // band allocations alive at the current column, stacking order
    const int64_t e0 = out.events.front();
    for (uint32_t i : m_byStart) {
        const Allocation& a = allocs[i];
        if (a.aliveAfter(e0))
            live.push_back(i); // m_byStart is already in stacking order
    }
    size_t born = size_t(std::upper_bound(m_byStart.begin(), m_byStart.end(), e0,
                                          [&](int64_t e, uint32_t i) { return e < allocs[i].start; }) -
                         m_byStart.begin());
    size_t died = size_t(std::upper_bound(m_byEnd.begin(), m_byEnd.end(), e0,
                                          [&](int64_t e, uint32_t i) { return e < allocs[i].end; }) -
                         m_byEnd.begin());

    out.small.resize(columns);
    out.total.resize(columns);
    out.offsets.reserve(columns + 1);
    for (size_t c = 0; c < columns; ++c) {
        const int64_t e = out.events[c];
        for (; born < m_byStart.size() && allocs[m_byStart[born]].start <= e; ++born) {
            const uint32_t i = m_byStart[born];
            live.insert(std::upper_bound(live.begin(), live.end(), i, less), i);
        }
        for (; died < m_byEnd.size() && allocs[m_byEnd[died]].end <= e; ++died) {
            const uint32_t i = m_byEnd[died];
            auto it = std::lower_bound(live.begin(), live.end(), i, less);
            if (it != live.end() && *it == i)
                live.erase(it);
        }
        int64_t bandBytes = 0;
        for (uint32_t i : live)
            bandBytes += allocs[i].size;
        const int64_t total = allocatedAt(e);
        out.total[c] = total;
        out.small[c] = std::max<int64_t>(0, total - bandBytes);
        out.offsets.push_back(static_cast<uint32_t>(out.slices.size()));
        int64_t bottom = out.small[c];
        for (uint32_t i : live) {
            out.slices.push_back({i, bottom});
            bottom += allocs[i].size;
        }
    }
    out.offsets.push_back(static_cast<uint32_t>(out.slices.size()));
    return out;
}

const BandSlice* BandColumns::sliceAt(const MemoryTimeline& tl, size_t column, int64_t bytes) const
{
    if (column >= columns())
        return nullptr;
    const BandSlice* first = slices.data() + offsets[column];
    const BandSlice* last = slices.data() + offsets[column + 1];
    const BandSlice* it = std::upper_bound(first, last, bytes, [](int64_t b, const BandSlice& s) { return b < s.bottom; });
    if (it == first)
        return nullptr;
    --it;
    return bytes < it->bottom + tl.allocations[it->allocation].size ? it : nullptr;
}

} // namespace headroom
