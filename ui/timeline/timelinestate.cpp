// SPDX-License-Identifier: MIT
#include "ui/timeline/timelinestate.h"

#include "core/whatif/projection/projectedtimeline.h"

#include "core/io/loader.h"
#include "ui/timeline/timelinecurves.h"

#include <algorithm>
#include <cmath>

namespace headroom {

TimelineState::TimelineState()
    : curves(TimelineCurves::compute(nullptr, nullptr))
{
}

void TimelineState::setDevice(std::shared_ptr<const LoadedTrace> t, int index)
{
    trace = std::move(t);
    data.reset();
    selection = SelectionState{};
    device = nullptr;
    timeline = nullptr;
    deviceIndex = -1;
    simulatedReserved.clear();
    simulatedPyramid = MinMaxPyramid();
    simulatedLabel.clear();
    projected.reset();
    projectedLabel.clear();
    if (trace && index >= 0 && index < static_cast<int>(trace->snapshot.devices.size())
        && index < static_cast<int>(trace->timelines.size())) {
        device = &trace->snapshot.devices[static_cast<size_t>(index)];
        timeline = &trace->timelines[static_cast<size_t>(index)];
        deviceIndex = index;
    }
}

void TimelineState::clear()
{
    setDevice(nullptr, -1);
    curves = TimelineCurves::compute(nullptr, nullptr);
}

int64_t TimelineState::eventCount() const
{
    return device ? static_cast<int64_t>(device->trace.count()) : 0;
}

bool TimelineState::hasTime() const
{
    return curves->hasTime();
}

double TimelineState::keyOf(int64_t event) const
{
    if (eventIndexAxis())
        return static_cast<double>(event);
    if (event < 0)
        return 0.0;
    return curves->keyAt(static_cast<size_t>(std::min(event, eventCount() - 1)));
}

int64_t TimelineState::eventAtKey(double key) const
{
    const int64_t n = eventCount();
    if (n == 0)
        return -1;
    int64_t i;
    if (eventIndexAxis()) {
        i = static_cast<int64_t>(std::floor(key));
    } else {
        i = static_cast<int64_t>(curves->firstAbove(key)) - 1;
    }
    return std::clamp<int64_t>(i, 0, n - 1);
}

int64_t TimelineState::firstEventAtOrAfterKey(double key) const
{
    const int64_t n = eventCount();
    if (eventIndexAxis())
        return std::clamp<int64_t>(int64_t(std::ceil(key)), 0, n);
    return static_cast<int64_t>(curves->firstAtOrAbove(key));
}

int64_t TimelineState::simulatedReservedAt(int64_t event) const
{
    if (simulatedReserved.empty() || !timeline)
        return -1;
    if (event < 0)
        return timeline->initialReserved;
    return size_t(event) < simulatedReserved.size() ? simulatedReserved[size_t(event)] : -1;
}

int64_t TimelineState::projectedAt(int64_t event) const
{
    if (!projected || !timeline || !projected->hasCurve())
        return -1;
    if (event < 0)
        return timeline->initialAllocated;
    const auto& c = projected->allocated.central;
    return size_t(event) < c.size() ? int64_t(c[size_t(event)]) : -1;
}

} // namespace headroom
