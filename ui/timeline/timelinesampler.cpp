// SPDX-License-Identifier: MIT
#include "ui/timeline/timelinesampler.h"

#include "core/io/loader.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/timelinestate.h"

#include <algorithm>

namespace headroom {

TimelineSampler::TimelineSampler(const TimelineState& state, double lower, double upper, size_t buckets)
    : m_state(state)
    , m_buckets(buckets)
{
    const int64_t n = state.eventCount();
    if (n == 0)
        return;
    m_first = static_cast<size_t>(std::max<int64_t>(0, state.eventAtKey(lower) - 1));
    m_last = static_cast<size_t>(std::min<int64_t>(n, state.eventAtKey(upper) + 2));
}

template <class Value>
std::vector<int64_t> TimelineSampler::eventsOf(const std::vector<Value>& values, const MinMaxPyramid& pyramid) const
{
    std::vector<int64_t> events;
    if (m_last <= m_first)
        return events;
    const std::vector<size_t> idx = pyramid.downsample(values, m_first, m_last, m_buckets);
    events.reserve(idx.size() + 2);
    if (m_first == 0)
        events.push_back(-1);
    if (idx.empty() || idx.front() != m_first)
        events.push_back(static_cast<int64_t>(m_first));
    for (size_t i : idx)
        events.push_back(static_cast<int64_t>(i));
    return events;
}

std::vector<int64_t> TimelineSampler::events(const std::vector<int64_t>& values, const MinMaxPyramid& pyramid) const
{
    return eventsOf(values, pyramid);
}

std::vector<int64_t> TimelineSampler::events(const std::vector<float>& values, const MinMaxPyramid& pyramid) const
{
    return eventsOf(values, pyramid);
}

std::vector<int64_t> TimelineSampler::events(const StepCurve& curve, const MinMaxPyramid& changes) const
{
    std::vector<int64_t> events;
    if (m_last <= m_first || curve.size() < m_last)
        return events;
    const size_t from = curve.changeAt(m_first), to = curve.changeAt(m_last - 1) + 1;
    const std::vector<size_t> idx = changes.downsample(curve.changeValues(), from, to, m_buckets);
    events.reserve(idx.size() + 3);
    if (m_first == 0)
        events.push_back(-1);
    events.push_back(static_cast<int64_t>(m_first));
    for (size_t k : idx) {
        const int64_t e = std::max<int64_t>(curve.changeEvents()[k], static_cast<int64_t>(m_first));
        if (e > events.back())
            events.push_back(e);
    }
    if (events.back() != static_cast<int64_t>(m_last - 1))
        events.push_back(static_cast<int64_t>(m_last - 1));
    return events;
}

template <class ValueAt>
void TimelineSampler::fillWith(const std::vector<int64_t>& events, int64_t initial, QVector<double>& keys,
                               QVector<double>& out, ValueAt valueAt) const
{
    keys.reserve(static_cast<qsizetype>(events.size()));
    out.reserve(keys.capacity());
    for (int64_t e : events) {
        keys.push_back(m_state.keyOf(e));
        out.push_back(e < 0 ? static_cast<double>(initial) : static_cast<double>(valueAt(size_t(e))));
    }
}

void TimelineSampler::fill(const std::vector<int64_t>& events, const std::vector<int64_t>& values, int64_t initial,
                           QVector<double>& keys, QVector<double>& out) const
{
    fillWith(events, initial, keys, out, [&](size_t e) { return values[e]; });
}

void TimelineSampler::fill(const std::vector<int64_t>& events, const std::vector<float>& values, int64_t initial,
                           QVector<double>& keys, QVector<double>& out) const
{
    fillWith(events, initial, keys, out, [&](size_t e) { return values[e]; });
}

void TimelineSampler::fill(const std::vector<int64_t>& events, const StepCurve& values, int64_t initial,
                           QVector<double>& keys, QVector<double>& out) const
{
    fillWith(events, initial, keys, out, [&](size_t e) { return values[e]; });
}

void TimelineSampler::fillBlocks(const std::vector<int64_t>& events, const std::vector<float>& blocks, size_t block,
                                 int64_t initial, QVector<double>& keys, QVector<double>& out) const
{
    fillWith(events, initial, keys, out, [&](size_t e) { return blocks[e / block]; });
}

void TimelineSampler::stackCategories(const std::vector<int64_t>& events, const QVector<double>& keys,
                                      const std::function<bool(TensorCategory)>& drawn, std::vector<double>& areaKeys,
                                      std::vector<std::array<double, kTensorCategoryCount>>& areaStacks) const
{
    // At the total's sample points: the stack's top follows the total's extremes, so no
    // peak disappears between samples.
    const std::vector<GroupedSeries::Values> values = m_state.data->analysis.categories.valuesAt(events);
    const auto& order = categoryStackOrder();
    areaKeys.resize(size_t(keys.size()));
    areaStacks.resize(size_t(keys.size()));
    for (size_t i = 0; i < size_t(keys.size()); ++i) {
        areaKeys[i] = keys[qsizetype(i)];
        double cum = 0;
        for (size_t p = 0; p < order.size(); ++p) {
            const TensorCategory c = order[p];
            if (drawn(c))
                cum += static_cast<double>(values[i][size_t(c)]);
            areaStacks[i][p] = cum;
        }
    }
}

} // namespace headroom
