// SPDX-License-Identifier: MIT
#include "core/replay/livesetindex.h"

#include "core/util/countingsort.h"

#include <algorithm>

namespace headroom {

LiveSetIndex::LiveSetIndex(const MemoryTimeline& tl)
    : m_events(static_cast<int64_t>(tl.allocated.size()))
{
    const auto& allocs = tl.allocations;
    const auto count = static_cast<uint32_t>(allocs.size());
    // The set alive before the first event, kept as a dense set (swap-remove) while sweeping.
    std::vector<uint32_t> live;
    std::vector<uint32_t> slot(count, UINT32_MAX);
    auto insert = [&](uint32_t i) {
        slot[i] = static_cast<uint32_t>(live.size());
        live.push_back(i);
    };
    auto remove = [&](uint32_t i) {
        const uint32_t at = slot[i];
        if (at == UINT32_MAX)
            return;
        live[at] = live.back();
        slot[live[at]] = at;
        live.pop_back();
        slot[i] = UINT32_MAX;
    };
    for (uint32_t i = 0; i < count; ++i) {
        const Allocation& a = allocs[i];
        if (a.start == Allocation::kBeforeWindow)
            insert(i);
        else
            m_byStart.push_back(i);
        if (a.end != Allocation::kStillAlive)
            m_byEnd.push_back(i);
    }
    countingSortByKey(m_byStart, m_events + 1, [&](uint32_t i) { return allocs[i].start; });
    countingSortByKey(m_byEnd, m_events + 1, [&](uint32_t i) { return allocs[i].end; });

    auto checkpoint = [&](int64_t position) {
        m_positions.push_back(position);
        m_offsets.push_back(m_members.size());
        const size_t from = m_members.size();
        m_members.insert(m_members.end(), live.begin(), live.end());
        std::sort(m_members.begin() + static_cast<ptrdiff_t>(from), m_members.end());
    };
    size_t s = 0, e = 0;
    int64_t next = 0;
    for (int64_t ev = 0; ev < m_events; ++ev) {
        if (ev == next) {
            checkpoint(ev);
            next = ev + std::max<int64_t>(kMinSpacing, static_cast<int64_t>(live.size()));
        }
        // An event either ends an allocation or starts one (an alloc over a lost free does
        // both, for two different allocations): deaths first, then births.
        for (; e < m_byEnd.size() && allocs[m_byEnd[e]].end == ev; ++e)
            remove(m_byEnd[e]);
        for (; s < m_byStart.size() && allocs[m_byStart[s]].start == ev; ++s)
            insert(m_byStart[s]);
    }
    if (m_positions.empty())
        checkpoint(0);
    m_offsets.push_back(m_members.size());
}

std::vector<uint32_t> LiveSetIndex::liveAfter(const MemoryTimeline& tl, int64_t event) const
{
    if (m_positions.empty())
        return {};
    const auto& allocs = tl.allocations;
    // The state after `event` is the state before event + 1.
    const int64_t before = std::clamp<int64_t>(event + 1, 0, m_events);
    const size_t k = static_cast<size_t>(
        std::upper_bound(m_positions.begin(), m_positions.end(), before) - m_positions.begin() - 1);
    const int64_t from = m_positions[k];

    auto byStartLess = [&](uint32_t i, int64_t v) { return allocs[i].start < v; };
    auto byEndLess = [&](uint32_t i, int64_t v) { return allocs[i].end < v; };
    const auto bornFirst = std::lower_bound(m_byStart.begin(), m_byStart.end(), from, byStartLess);
    const auto bornLast = std::lower_bound(bornFirst, m_byStart.end(), before, byStartLess);
    const auto diedFirst = std::lower_bound(m_byEnd.begin(), m_byEnd.end(), from, byEndLess);
    const auto diedLast = std::lower_bound(diedFirst, m_byEnd.end(), before, byEndLess);

    std::vector<uint32_t> died(diedFirst, diedLast);
    std::sort(died.begin(), died.end());
    std::vector<uint32_t> out(m_members.begin() + static_cast<ptrdiff_t>(m_offsets[k]),
                              m_members.begin() + static_cast<ptrdiff_t>(m_offsets[k + 1]));
    const size_t kept = out.size();
    out.insert(out.end(), bornFirst, bornLast);
    std::sort(out.begin() + static_cast<ptrdiff_t>(kept), out.end());
    std::inplace_merge(out.begin(), out.begin() + static_cast<ptrdiff_t>(kept), out.end());
    // Born and died in the range, or alive at the checkpoint and died since: drop them.
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](uint32_t i) { return std::binary_search(died.begin(), died.end(), i); }),
              out.end());
    return out;
}

} // namespace headroom
