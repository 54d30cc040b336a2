// SPDX-License-Identifier: MIT
#include "core/whatif/query/fitjudgement.h"

#include "core/whatif/query/whatifsession.h"

#include <cmath>
#include <stdexcept>

namespace headroom {

namespace {

/// The run as recorded, projected at `capacity` with `margin` free, as whatif projects it.
void judgeByProjection(FitJudgement& j, const std::shared_ptr<const LoadedTrace>& trace, size_t deviceIndex,
                       const DeviceAnalysis& a)
{
    WhatIfQuery q;
    q.measured = {trace, StatedConfig{}, nullptr};
    q.device = deviceIndex;
    q.analysis = std::shared_ptr<const DeviceAnalysis>(std::shared_ptr<void>(), &a);
    q.constants.setMargin(j.margin);
    const WhatIfSession session(q);
    const Projection p = session.project(session.baseline().config, whatIfDevice(j.capacity));
    j.projected = true;
    j.verdict = p.verdict;
    j.peak = p.peak;
    j.peakLow = p.peakLow;
    j.peakHigh = p.peakHigh;
    j.marginLeft = p.marginLeft;
}

} // namespace

FitJudgement judgeFit(const std::shared_ptr<const LoadedTrace>& trace, size_t deviceIndex, const DeviceAnalysis& a,
                      int64_t capacity, double margin)
{
    FitJudgement j;
    j.capacity = capacity;
    j.margin = margin;
    j.peakAllocated = trace->timelines[deviceIndex].peakAllocated;
    j.limit = int64_t(std::floor(double(capacity) * (1.0 - margin)));
    try {
        judgeByProjection(j, trace, deviceIndex, a);
    } catch (const std::runtime_error& e) { // WhatIfMissingValue is one: a run with no step to calibrate on
        j.projected = false;
        j.notProjectedBecause = e.what();
        j.marginLeft = allocatedMarginLeft(j.peakAllocated, capacity);
        j.verdict = j.peakAllocated <= j.limit ? Verdict::Fits : Verdict::DoesNotFit;
    }
    return j;
}

} // namespace headroom
