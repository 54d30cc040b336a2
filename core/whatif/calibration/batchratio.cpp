// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/batchratio.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace headroom {

Calibration withBatchRatios(Calibration cal)
{
    WhatIfBaseline& b = cal.baseline;
    if (cal.known("micro_batch") || b.microBatchUnits > 0)
        return cal;
    b.config.microBatch = kBatchRatioUnits;
    b.microBatchUnits = kBatchRatioUnits;
    if (b.lateBackward) { // the second reading of the start of backward counts alike
        auto late = std::make_shared<WhatIfState>(*b.lateBackward);
        late->config.microBatch = kBatchRatioUnits;
        late->microBatchUnits = kBatchRatioUnits;
        b.lateBackward = std::move(late);
    }
    for (MeasuredItem& m : cal.measured)
        if (m.key == "micro_batch") {
            m.value = "x1";
            m.how = "ratio";
            m.detail = "the trace does not tell it: the micro-batch lever moves in ratios of the measured run";
        }
    return cal;
}

LeverConfig countedFromRatio(LeverConfig c, int unitsPerRun, int measuredMicroBatch)
{
    if (unitsPerRun > 0 && measuredMicroBatch > 0)
        c.microBatch = std::max(1, int(std::lround(double(c.microBatch) * measuredMicroBatch / unitsPerRun)));
    return c;
}

LeverConfig inBaselineUnits(LeverConfig c, int units, const WhatIfBaseline& to)
{
    if (units == to.microBatchUnits)
        return c;
    // `to`'s measured run is config.microBatch in its own units (a count, or kBatchRatioUnits).
    if (units > 0)
        return countedFromRatio(c, units, to.config.microBatch);
    c.microBatch = to.config.microBatch;
    return c;
}

} // namespace headroom
