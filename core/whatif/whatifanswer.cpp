// SPDX-License-Identifier: MIT
#include "core/whatif/whatifanswer.h"

#include "core/whatif/peakbreakdown.h"
#include "core/whatif/projectedallocator.h"

namespace headroom {

namespace {

Projection simulated(const WhatIfBaseline& base, const LeverConfig& target, const WhatIfConstants& k,
                     const DeviceSpec& device, const WhatIfContext& context)
{
    Projection p = project(base, target, k, device);
    if (context.recordedAllocator)
        simulateReserved(p, base, *context.recordedAllocator);
    return p;
}

} // namespace

Projection answerWhatIf(const WhatIfBaseline& base, const LeverConfig& target, const WhatIfConstants& k,
                        const DeviceSpec& device, const WhatIfContext& context)
{
    Projection p = simulated(base, target, k, device, context);
    if (context.cutStep) {
        const double cutAllocated = target == base.config
                                        ? p.peakAllocated
                                        : simulated(base, base.config, k, device, context).peakAllocated;
        projectWholeStep(p, cutAllocated, *context.cutStep);
    }
    describePeak(p, base);
    return p;
}

} // namespace headroom
