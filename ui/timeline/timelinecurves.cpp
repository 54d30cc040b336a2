// SPDX-License-Identifier: MIT
#include "ui/timeline/timelinecurves.h"

#include "core/io/loader.h"

#include <algorithm>

namespace headroom {

std::shared_ptr<const TimelineCurves> TimelineCurves::compute(const DeviceData* device, const MemoryTimeline* timeline)
{
    auto c = std::make_shared<TimelineCurves>();
    if (timeline) {
        c->allocated = MinMaxPyramid(timeline->allocated);
        c->reserved = MinMaxPyramid(timeline->reserved.changeValues());
    }
    if (device && device->trace.anyTime) {
        const std::vector<int64_t>& t = device->trace.timeUs;
        const auto first = std::find_if(t.begin(), t.end(), [](int64_t v) { return v != TraceEvents::kNoTime; });
        const auto lastTime = std::find_if(t.rbegin(), t.rend(), [](int64_t v) { return v != TraceEvents::kNoTime; });
        if (first != t.end()) {
            c->firstTimeUs = *first;
            const int64_t span = *lastTime - c->firstTimeUs;
            c->timeUnitUs = span >= 2000000 ? 1e6 : span >= 2000 ? 1e3 : 1.0;
            if (first == t.begin() && std::find(t.begin(), t.end(), TraceEvents::kNoTime) == t.end()
                && std::is_sorted(t.begin(), t.end())) {
                c->m_times = &t;
            } else {
                c->m_keys.resize(t.size());
                double last = 0;
                for (size_t i = 0; i < t.size(); ++i) {
                    if (t[i] != TraceEvents::kNoTime)
                        last = std::max(last, static_cast<double>(t[i] - c->firstTimeUs) / c->timeUnitUs);
                    c->m_keys[i] = last;
                }
            }
        }
    }
    return c;
}

size_t TimelineCurves::firstAbove(double key) const
{
    size_t lo = 0, hi = keyCount();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (key < keyAt(mid))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

size_t TimelineCurves::firstAtOrAbove(double key) const
{
    size_t lo = 0, hi = keyCount();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (keyAt(mid) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

std::vector<std::shared_ptr<const TimelineCurves>> TimelineCurves::computeAll(const LoadedTrace& trace)
{
    std::vector<std::shared_ptr<const TimelineCurves>> out;
    for (size_t i = 0; i < trace.snapshot.devices.size() && i < trace.timelines.size(); ++i)
        out.push_back(compute(&trace.snapshot.devices[i], &trace.timelines[i]));
    return out;
}

} // namespace headroom
