// SPDX-License-Identifier: MIT
#include "core/analysis/timelinebands.h"

#include "core/analysis/categoryclassifier.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace headroom {

GroupedSeries::GroupedSeries(const MemoryTimeline& tl, const std::function<int(size_t)>& groupOf)
{
    // A counting sort without a second copy of the steps: mark each event's groups, turn the
    // marks into where each event's steps begin, then add every boundary into its event's
    // step of its group (one step per event and group).
    std::vector<uint8_t> groups(tl.allocations.size(), kNoGroup);
    int64_t lastEvent = -1;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const int g = groupOf(i);
        if (g < 0 || g >= static_cast<int>(kGroups))
            continue;
        groups[i] = static_cast<uint8_t>(g);
        const Allocation& a = tl.allocations[i];
        lastEvent = std::max<int64_t>({lastEvent, a.start, a.end});
    }
    // A group mask per event, kept only while the steps are placed.
    static_assert(kGroups <= 16, "a group mask per event is 16 bits");
    std::vector<uint16_t> marks(size_t(lastEvent + 1), 0);
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
            marks[size_t(a.start)] |= uint16_t(1u << groups[i]);
        }
        if (a.end != Allocation::kStillAlive)
            marks[size_t(a.end)] |= uint16_t(1u << groups[i]);
    }
    const std::vector<uint32_t> before = countSteps(marks);
    m_steps.assign(before.back(), 0);
    auto add = [&](int64_t event, int64_t delta, uint8_t group) {
        const uint16_t m = marks[size_t(event)];
        int64_t& step = m_steps[before[size_t(event)] + size_t(std::popcount(unsigned(m & ((1u << group) - 1u))))];
        step = int64_t(uint64_t((step >> 8) + delta) << 8) | group;
    };
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        if (groups[i] == kNoGroup)
            continue;
        const Allocation& a = tl.allocations[i];
        if (a.start != Allocation::kBeforeWindow)
            add(a.start, a.size, groups[i]);
        if (a.end != Allocation::kStillAlive)
            add(a.end, -a.size, groups[i]);
    }
    Values v = m_initial;
    m_checkpoints.reserve(m_steps.size() / kCheckpoint + 1);
    for (size_t k = 0; k < m_steps.size(); ++k) {
        if (k % kCheckpoint == 0)
            m_checkpoints.push_back(v);
        apply(m_steps[k], v);
    }
}

std::vector<uint32_t> GroupedSeries::countSteps(const std::vector<uint16_t>& marks)
{
    // Each event's steps (its groups, at most kGroups) and, per block of kBlock events, the
    // steps before it; plus, for the placing only, where every event's steps begin.
    std::vector<uint32_t> before(marks.size() + 1, 0);
    m_count.resize(marks.size());
    m_blockBefore.reserve(marks.size() / kBlock + 1);
    uint64_t steps = 0;
    for (size_t e = 0; e < marks.size(); ++e) {
        if (e % kBlock == 0)
            m_blockBefore.push_back(uint32_t(steps));
        before[e] = uint32_t(steps);
        m_count[e] = uint8_t(std::popcount(unsigned(marks[e])));
        steps += m_count[e];
        if (steps >= (uint64_t(1) << 32))
            throw std::length_error("the category series takes at most 2^32 steps; this trace has more");
    }
    before.back() = uint32_t(steps);
    return before;
}

size_t GroupedSeries::stepsUpTo(int64_t event) const
{
    if (m_count.empty() || event < 0)
        return 0;
    const size_t e = std::min(size_t(event), m_count.size() - 1), block = e / kBlock;
    size_t n = m_blockBefore[block];
    for (size_t k = block * kBlock; k <= e; ++k)
        n += m_count[k];
    return n;
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
