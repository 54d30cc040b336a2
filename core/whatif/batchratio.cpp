// SPDX-License-Identifier: MIT
#include "core/whatif/batchratio.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <numeric>

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

size_t batchRatioStep(int units)
{
    size_t best = 0;
    for (size_t i = 1; i < kBatchRatioSteps.size(); ++i)
        if (std::abs(kBatchRatioSteps[i] - units) < std::abs(kBatchRatioSteps[best] - units))
            best = i;
    return best;
}

std::string batchRatioText(int units, int unitsPerRun)
{
    if (unitsPerRun <= 0)
        return std::to_string(units);
    const int g = std::gcd(std::max(units, 0), unitsPerRun);
    const int num = g > 0 ? units / g : units, den = g > 0 ? unitsPerRun / g : unitsPerRun;
    char buf[32];
    if (den == 1)
        std::snprintf(buf, sizeof buf, "x%d", num);
    else
        std::snprintf(buf, sizeof buf, "x%d/%d", num, den);
    return buf;
}

std::string microBatchText(int microBatch, int unitsPerRun)
{
    if (unitsPerRun > 0)
        return batchRatioText(microBatch, unitsPerRun);
    return microBatch > 0 ? std::to_string(microBatch) : std::string("unknown");
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
