// SPDX-License-Identifier: MIT
#include "core/analysis/timelinebands.h"

#include "core/analysis/categoryclassifier.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace headroom {

GroupedSeries::GroupedSeries(const MemoryTimeline& tl, const std::function<int(size_t)>& groupOf)
{
    // A counting sort without a second copy of the steps: count each event's steps, turn the
    // counts into where each event's steps begin, then place every step at its event.
    std::vector<uint8_t> groups(tl.allocations.size(), kNoGroup);
    int64_t lastEvent = -1;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const int g = groupOf(i);
        if (g < 0 || g >= static_cast<int>(kGroups))
            continue;
        groups[i] = static_cast<uint8_t>(g);
        const Allocation& a = tl.allocations[i];
        lastEvent = std::max({lastEvent, a.start, a.end});
    }
    m_before.assign(size_t(lastEvent + 2), 0);
    size_t steps = 0;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        if (groups[i] == kNoGroup)
            continue;
        const Allocation& a = tl.allocations[i];
        // Alive after event e when start <= e and (end == -1 or end > e): a step up at its
        // start, a step down at its end.
        if (a.start == Allocation::kBeforeWindow) {
            m_initial[groups[i]] += a.size;
            m_initialTotal += a.size;
        } else {
            ++m_before[size_t(a.start) + 1];
            ++steps;
        }
        if (a.end != Allocation::kStillAlive) {
            ++m_before[size_t(a.end) + 1];
            ++steps;
        }
    }
    if (steps >= (size_t(1) << 32))
        throw std::length_error("the category series takes at most 2^32 steps; this trace has " + std::to_string(steps));
    for (size_t k = 1; k < m_before.size(); ++k)
        m_before[k] += m_before[k - 1];
    m_steps.resize(steps);
    // m_before[e] is the next free place of event e's steps while placing; afterwards the
    // place after its last, which is where event e + 1 began: shifted back by one below.
    auto place = [&](int64_t event, int64_t delta, uint8_t group) {
        m_steps[m_before[size_t(event)]++] = int64_t(uint64_t(delta) << 8) | group;
    };
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        if (groups[i] == kNoGroup)
            continue;
        const Allocation& a = tl.allocations[i];
        if (a.start != Allocation::kBeforeWindow)
            place(a.start, a.size, groups[i]);
        if (a.end != Allocation::kStillAlive)
            place(a.end, -a.size, groups[i]);
    }
    for (size_t k = m_before.size() - 1; k > 0; --k)
        m_before[k] = m_before[k - 1];
    m_before[0] = 0;
    Values v = m_initial;
    m_checkpoints.reserve(m_steps.size() / kCheckpoint + 1);
    for (size_t k = 0; k < m_steps.size(); ++k) {
        if (k % kCheckpoint == 0)
            m_checkpoints.push_back(v);
        apply(m_steps[k], v);
    }
}

size_t GroupedSeries::stepsUpTo(int64_t event) const
{
    if (m_before.empty() || event < 0)
        return 0;
    return m_before[std::min(size_t(event) + 1, m_before.size() - 1)];
}

std::vector<GroupedSeries::Values> GroupedSeries::valuesAt(const std::vector<int64_t>& events) const
{
    std::vector<Values> out;
    out.reserve(events.size());
    if (events.empty())
        return out;
    // Start from the checkpoint before the first event's steps, then sweep forward.
    size_t at = 0;
    Values v = m_initial;
    if (!m_checkpoints.empty()) {
        const size_t c = std::min(stepsUpTo(events.front()) / kCheckpoint, m_checkpoints.size() - 1);
        v = m_checkpoints[c];
        at = c * kCheckpoint;
    }
    for (int64_t e : events) {
        for (const size_t upTo = stepsUpTo(e); at < upTo; ++at)
            apply(m_steps[at], v);
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
