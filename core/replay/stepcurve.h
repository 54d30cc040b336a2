// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// A value after every event, stored where it changes: reserved memory moves only when a
/// segment is mapped or released, a few thousand times in a 10M-event trace, so 80 MB of
/// per-event values become a few KB (docs/performance.md). A curve that changes at every
/// event (a Kineto trace's recorded totals) costs 12 bytes an event instead of 8.
class StepCurve {
public:
    /// Appends the value after the next event.
    void push_back(int64_t v)
    {
        if (m_values.empty() || v != m_values.back()) {
            m_changes.push_back(uint32_t(m_count));
            m_values.push_back(v);
        }
        ++m_count;
    }
    /// `n` events, each with value `v`.
    void assign(size_t n, int64_t v);
    /// Adds `d` to the value after every event.
    void offset(int64_t d);

    /// The value after `event` (< size()).
    int64_t operator[](size_t event) const { return m_values[changeAt(event)]; }
    size_t size() const { return m_count; }
    bool empty() const { return m_count == 0; }
    /// The largest value; `otherwise` where there is none.
    int64_t max(int64_t otherwise) const;
    /// Every event's value, for comparisons.
    std::vector<int64_t> dense() const;

    /// The change in effect after `event`: from event changeEvents()[k] on, the value is
    /// changeValues()[k], until the next change.
    size_t changeAt(size_t event) const;
    const std::vector<uint32_t>& changeEvents() const { return m_changes; }
    const std::vector<int64_t>& changeValues() const { return m_values; }

    bool operator==(const StepCurve&) const = default;

private:
    std::vector<uint32_t> m_changes; ///< ascending; the first is event 0
    std::vector<int64_t> m_values;
    size_t m_count = 0;
};

} // namespace headroom
