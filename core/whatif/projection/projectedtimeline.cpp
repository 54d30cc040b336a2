// SPDX-License-Identifier: MIT
#include "core/whatif/projection/projectedtimeline.h"

#include "core/whatif/projection/projectedallocator.h"

#include <algorithm>

namespace headroom {

void adoptSimulation(Projection& p, const ProjectedTimeline& t)
{
    p.simulated = t.simulated;
    p.verdict = t.verdict;
    p.fits = t.verdict == Verdict::Fits;
    p.verdictByRatio = t.verdictByRatio;
}

ProjectedTimeline projectTimeline(const WhatIfBaseline& base, const Projection& p, size_t events,
                                  const AllocatorConfig& recorded)
{
    ProjectedTimeline out;
    out.peak = p.peakAllocated;
    out.peakLow = p.peakAllocatedLow;
    out.peakHigh = p.peakAllocatedHigh;
    out.capacity = p.capacity;
    out.verdict = p.verdict;
    out.changes = p.config.differences(base.config, base.microBatchUnits);
    if (!p.replayed || !base.trace)
        return out;
    out.allocated = base.trace->curve(p.replayTarget, events);
    out.peakEvent = p.replayPeakEvent;
    Projection withReserved = p;
    simulateReserved(withReserved, base, recorded);
    out.simulated = withReserved.simulated;
    out.verdict = withReserved.verdict;
    out.verdictByRatio = withReserved.verdictByRatio;
    if (out.simulated && out.simulated->refused())
        out.oomEvent = std::max<int64_t>(0, out.simulated->oomEvent); // before the trace: at its start
    return out;
}

} // namespace headroom
