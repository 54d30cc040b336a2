// SPDX-License-Identifier: MIT
#include "core/analysis/timelinebands.h"

#include "core/analysis/categoryclassifier.h"
#include "core/util/countingsort.h"

#include <algorithm>

namespace headroom {

GroupedSeries::GroupedSeries(const MemoryTimeline& tl, const std::function<int(size_t)>& groupOf)
{
    m_steps.reserve(tl.allocations.size() * 2);
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const int g = groupOf(i);
        if (g < 0 || g >= static_cast<int>(kGroups))
            continue;
        const auto group = static_cast<uint8_t>(g);
        // Alive after event e when start <= e and (end == -1 or end > e): a step up at
        // its start, a step down at its end.
        if (a.start == Allocation::kBeforeWindow) {
            m_initial[group] += a.size;
            m_initialTotal += a.size;
        } else {
            m_steps.push_back({a.start, a.size, group});
        }
        if (a.end != Allocation::kStillAlive)
            m_steps.push_back({a.end, -a.size, group});
    }
    countingSortByKey(m_steps, static_cast<int64_t>(tl.allocated.size()) + 1, [](const Step& s) { return s.event; });
    Values v = m_initial;
    m_checkpoints.reserve(m_steps.size() / kCheckpoint + 1);
    for (size_t k = 0; k < m_steps.size(); ++k) {
        if (k % kCheckpoint == 0)
            m_checkpoints.push_back(v);
        v[m_steps[k].group] += m_steps[k].delta;
    }
}

std::vector<GroupedSeries::Values> GroupedSeries::valuesAt(const std::vector<int64_t>& events) const
{
    std::vector<Values> out;
    out.reserve(events.size());
    if (events.empty())
        return out;
    // Start from the checkpoint before the first event's steps, then sweep forward.
    const auto firstAfter = std::upper_bound(m_steps.begin(), m_steps.end(), events.front(),
                                             [](int64_t e, const Step& s) { return e < s.event; });
    size_t k = static_cast<size_t>(firstAfter - m_steps.begin());
    size_t c = k / kCheckpoint;
    Values v = m_checkpoints.empty() ? m_initial : m_checkpoints[std::min(c, m_checkpoints.size() - 1)];
    size_t at = m_checkpoints.empty() ? 0 : std::min(c, m_checkpoints.size() - 1) * kCheckpoint;
    for (int64_t e : events) {
        while (at < m_steps.size() && m_steps[at].event <= e) {
            v[m_steps[at].group] += m_steps[at].delta;
            ++at;
        }
        out.push_back(v);
    }
    return out;
}

GroupedSeries::Values GroupedSeries::valueAt(int64_t event) const
{
    return valuesAt({event}).front();
}

GroupedSeries categorySeries(const MemoryTimeline& timeline, const std::vector<AllocationClass>& classes)
{
    return GroupedSeries(timeline, [&](size_t i) {
        return i < classes.size() ? static_cast<int>(classes[i].category) : static_cast<int>(TensorCategory::Unknown);
    });
}

std::vector<int64_t> filteredLiveBytes(const MemoryTimeline& tl, size_t eventCount,
                                       const std::function<bool(size_t)>& selected)
{
    std::vector<int64_t> delta(eventCount + 1, 0);
    int64_t initial = 0;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        if (!selected(i))
            continue;
        const Allocation& a = tl.allocations[i];
        if (a.start == Allocation::kBeforeWindow)
            initial += a.size;
        else if (static_cast<size_t>(a.start) < eventCount)
            delta[static_cast<size_t>(a.start)] += a.size;
        if (a.end != Allocation::kStillAlive && static_cast<size_t>(a.end) < eventCount)
            delta[static_cast<size_t>(a.end)] -= a.size;
    }
    std::vector<int64_t> out(eventCount);
    int64_t v = initial;
    for (size_t e = 0; e < eventCount; ++e) {
        v += delta[e];
        out[e] = v;
    }
    return out;
}

std::vector<uint32_t> shownFrames(const FrameTable& frames, uint32_t stackId, bool pythonOnly)
{
    const auto stack = frames.stack(stackId);
    bool python = false;
    if (pythonOnly)
        for (uint32_t f : stack)
            python = python || frames.isPythonFrame(f);
    std::vector<uint32_t> out;
    for (size_t k = stack.size(); k-- > 0;)
        if (!frames.isNoiseFrame(stack[k]) && (!python || frames.isPythonFrame(stack[k])))
            out.push_back(stack[k]);
    return out;
}

bool stackStartsWith(const FrameTable& frames, uint32_t stackId, const std::vector<uint32_t>& path, bool pythonOnly)
{
    if (path.empty())
        return true;
    const std::vector<uint32_t> shown = shownFrames(frames, stackId, pythonOnly);
    return shown.size() >= path.size() && std::equal(path.begin(), path.end(), shown.begin());
}

std::vector<size_t> bornInRange(const MemoryTimeline& tl, int64_t first, int64_t last)
{
    std::vector<size_t> out;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const int64_t s = tl.allocations[i].start;
        if (s != Allocation::kBeforeWindow && s >= first && s <= last)
            out.push_back(i);
    }
    std::stable_sort(out.begin(), out.end(),
                     [&](size_t x, size_t y) { return tl.allocations[x].start < tl.allocations[y].start; });
    return out;
}

int64_t maxEventInRange(const MemoryTimeline& tl, int64_t first, int64_t last)
{
    const int64_t n = static_cast<int64_t>(tl.allocated.size());
    if (n == 0)
        return -1;
    first = std::clamp<int64_t>(first, 0, n - 1);
    last = std::clamp<int64_t>(last, first, n - 1);
    int64_t best = first;
    for (int64_t e = first + 1; e <= last; ++e)
        if (tl.allocated[size_t(e)] > tl.allocated[size_t(best)])
            best = e;
    return best;
}

} // namespace headroom
