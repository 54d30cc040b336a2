// SPDX-License-Identifier: MIT
#include "core/whatif/query/fitjudgement.h"

#include "core/whatif/query/whatifsession.h"

#include <cmath>
#include <stdexcept>

namespace headroom {

FitJudgement judgeFit(const WhatIfSession& session, int64_t peakAllocated, int64_t capacity)
{
    FitJudgement j;
    j.capacity = capacity;
    j.peakAllocated = peakAllocated;
    const Projection p = session.project(session.baseline().config, whatIfDevice(capacity));
    j.margin = p.margin;
    j.limit = int64_t(std::floor(double(capacity) * (1.0 - j.margin)));
    j.projected = true;
    j.verdict = p.verdict;
    j.peak = p.peak;
    j.peakLow = p.peakLow;
    j.peakHigh = p.peakHigh;
    j.marginLeft = p.marginLeft;
    j.judgedContext = p.judgedContext;
    j.wholeStepFromCut = p.wholeStepFromCut;
    j.outsideLeftOut = p.outsideLeftOut;
    return j;
}

FitJudgement judgeAllocatedPeak(int64_t peakAllocated, int64_t capacity, double margin, const std::string& because)
{
    FitJudgement j;
    j.capacity = capacity;
    j.margin = margin;
    j.peakAllocated = peakAllocated;
    j.limit = int64_t(std::floor(double(capacity) * (1.0 - margin)));
    j.notProjectedBecause = because;
    j.marginLeft = allocatedMarginLeft(peakAllocated, capacity);
    j.verdict = peakAllocated <= j.limit ? Verdict::Fits : peakAllocated <= capacity ? Verdict::Tight : Verdict::DoesNotFit;
    return j;
}

FitJudgement judgeFit(const std::shared_ptr<const LoadedTrace>& trace, size_t deviceIndex, const DeviceAnalysis& a,
                      int64_t capacity, double margin)
{
    const int64_t peakAllocated = trace->timelines[deviceIndex].peakAllocated;
    try {
        WhatIfQuery q;
        q.measured = {trace, StatedConfig{}, nullptr};
        q.device = deviceIndex;
        q.analysis = std::shared_ptr<const DeviceAnalysis>(std::shared_ptr<void>(), &a);
        q.constants.setMargin(margin);
        return judgeFit(WhatIfSession(q), peakAllocated, capacity);
    } catch (const std::runtime_error& e) { // WhatIfMissingValue is one: a run with no step to calibrate on
        return judgeAllocatedPeak(peakAllocated, capacity, margin, e.what());
    }
}

} // namespace headroom
