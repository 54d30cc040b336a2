// SPDX-License-Identifier: MIT
#include "core/whatif/vocabulary/batchunits.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace headroom {

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

} // namespace headroom
