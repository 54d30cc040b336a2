// SPDX-License-Identifier: MIT
#pragma once

// A step the OOM cut short, projected whole (issue 46 item 3). The what-if calibrates on the
// cut iteration, which holds only what the step had allocated when the OOM stopped it: a lever's
// projection of it is a projection of part of a step. The diagnosis's band for the whole step
// (analysis/oomprogress.h) is the start instead, and a lever moves it by the share it moves the
// cut iteration.

#include "core/whatif/vocabulary/whatifmodel.h"

#include <cstdint>
#include <string>

namespace headroom {

struct CutStep {
    std::string phase;          ///< the phase the OOM stopped ("forward")
    int64_t lowerBound = 0;     ///< allocated at the OOM + the failing request
    int64_t wholeLow = 0;       ///< the whole step's need (oomprogress.h); 0: no estimate
    int64_t wholeHigh = 0;      ///< 0: no estimate (no complete step in the file to scale)
};

/// Rewrites `p`, a projection of the cut iteration, as the whole step's: its allocated band is
/// the whole step's band times p's allocated peak over `cutAllocated` (the as-run projection of
/// the cut iteration), context and fragmentation kept. It fits only when the band's high end
/// does; where only the low end does (or no high is known) it may fit: Tight, not a fit, with a
/// warning that says what would settle it.
void projectWholeStep(Projection& p, double cutAllocated, const CutStep& cut);

} // namespace headroom
