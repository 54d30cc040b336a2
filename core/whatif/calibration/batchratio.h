// SPDX-License-Identifier: MIT
#pragma once

// A trace rarely tells the micro-batch it was measured at, yet every batch-shaped term of the
// projection is a ratio of it: the activations, the batch temporaries and the gradients of a
// micro-batch twice as large are twice as large, whatever it was. So the micro-batch lever
// still moves without it, in ratios of the measured run (docs/whatif-model.md, "Ratios of the
// measured run"). The sequence cannot: whether a tensor is b*s^2 or b*s*4d needs the
// absolute length to factor its size, so a sequence lever waits for the measured value.

#include "core/whatif/vocabulary/batchunits.h"
#include "core/whatif/calibration/whatifcalibration.h"

#include <string>

namespace headroom {

/// `cal` with its unknown micro-batch counted in ratio units: the baseline's micro-batch is
/// kBatchRatioUnits, its `microBatchUnits` says so, and the measured item reads "ratio".
/// A calibration that knows its micro-batch comes back unchanged.
Calibration withBatchRatios(Calibration cal);

/// `c`'s micro-batch in ratio units turned into a count, once the measured run's is known.
LeverConfig countedFromRatio(LeverConfig c, int unitsPerRun, int measuredMicroBatch);

/// `c`, whose micro-batch counts `units` per measured run (0: a count), in the units of `to`:
/// a ratio becomes a count once `to` knows the measured micro-batch; a count cannot become a
/// ratio without it, and takes `to`'s own (x1).
LeverConfig inBaselineUnits(LeverConfig c, int units, const WhatIfBaseline& to);

} // namespace headroom
