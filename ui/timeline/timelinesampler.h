// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/tensorcategory.h"
#include "core/replay/stepcurve.h"
#include "core/util/minmaxpyramid.h"

#include <QVector>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace headroom {

struct TimelineState;

/// The timeline's curves over the visible events, as the plot gets them: a per-event curve
/// reduced with its MinMaxPyramid to every bucket's minimum and maximum (about two points
/// per pixel, no extreme lost), the state before the first event included where the view
/// starts there, turned into x keys and values. The category areas are stacked at the
/// total's sample points. No pixels: the caller gives the key range and the bucket count.
class TimelineSampler {
public:
    /// The events in view for keys [lower, upper], with one event of margin on both sides
    /// so that the steps reach the axis edges; `buckets`: about the plot's width in pixels.
    TimelineSampler(const TimelineState& state, double lower, double upper, size_t buckets);

    /// The events drawn for `values` (one per event): -1 for the state before the first
    /// event when the view starts there, then the first event in view and every bucket's
    /// extremes.
    std::vector<int64_t> events(const std::vector<int64_t>& values, const MinMaxPyramid& pyramid) const;
    std::vector<int64_t> events(const std::vector<float>& values, const MinMaxPyramid& pyramid) const;
    /// The same for a curve stored where it changes, `changes` built on its changeValues():
    /// every change in view, or each bucket's extremes where they are more than the buckets.
    std::vector<int64_t> events(const StepCurve& curve, const MinMaxPyramid& changes) const;
    /// The keys and values of `events`; `initial` is the value before the first event.
    void fill(const std::vector<int64_t>& events, const std::vector<int64_t>& values, int64_t initial,
              QVector<double>& keys, QVector<double>& out) const;
    void fill(const std::vector<int64_t>& events, const std::vector<float>& values, int64_t initial,
              QVector<double>& keys, QVector<double>& out) const;
    void fill(const std::vector<int64_t>& events, const StepCurve& values, int64_t initial, QVector<double>& keys,
              QVector<double>& out) const;
    /// The same from a series held per block of `block` events (the projected band's edges).
    void fillBlocks(const std::vector<int64_t>& events, const std::vector<float>& blocks, size_t block,
                    int64_t initial, QVector<double>& keys, QVector<double>& out) const;
    /// The category areas at `events` (keyed `keys`): cumulative tops by stack position of
    /// the categories `drawn` says are drawn.
    void stackCategories(const std::vector<int64_t>& events, const QVector<double>& keys,
                         const std::function<bool(TensorCategory)>& drawn, std::vector<double>& areaKeys,
                         std::vector<std::array<double, kTensorCategoryCount>>& areaStacks) const;

    size_t first() const { return m_first; }
    size_t last() const { return m_last; }

private:
    template <class Value>
    std::vector<int64_t> eventsOf(const std::vector<Value>& values, const MinMaxPyramid& pyramid) const;
    /// `valueAt(event)` for every event of `events` but -1, which takes `initial`.
    template <class ValueAt>
    void fillWith(const std::vector<int64_t>& events, int64_t initial, QVector<double>& keys, QVector<double>& out,
                  ValueAt valueAt) const;

    const TimelineState& m_state;
    size_t m_first = 0; ///< the first event in view
    size_t m_last = 0;  ///< one past the last
    size_t m_buckets;
};

} // namespace headroom
