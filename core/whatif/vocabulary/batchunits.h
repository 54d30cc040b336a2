// SPDX-License-Identifier: MIT
#pragma once

// The units a micro-batch lever counts in when the trace does not tell the measured micro-batch
// (batchratio.h says why): the steps a lever offers and their text. No other what-if header is
// needed, so the configuration's own text (whatifmodel.h) can use them.

#include <array>
#include <cstddef>
#include <string>

namespace headroom {

/// The measured micro-batch counts as this many units: x1/4 is one unit, x16 is 64.
constexpr int kBatchRatioUnits = 4;
/// The ratios a micro-batch lever offers, in units: x1/4, x1/2, x3/4, x1, x3/2, x2 ... x16.
constexpr std::array<int, 12> kBatchRatioSteps{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
/// The index of the step nearest `units`.
size_t batchRatioStep(int units);

/// "x1/4", "x3/4", "x1", "x2": `units` of a measured run worth `unitsPerRun`.
std::string batchRatioText(int units, int unitsPerRun);

/// The micro-batch as the configuration's text: the count, or its ratio when `unitsPerRun`
/// > 0, or "unknown" (0).
std::string microBatchText(int microBatch, int unitsPerRun);

} // namespace headroom
