// SPDX-License-Identifier: MIT
#pragma once

// Several calibration runs of one job: two or more snapshots at different
// micro-batches or sequence lengths measure the batch-proportional and the quadratic parts
// of the start of backward directly, instead of inferring them from one run's tensor sizes
// (the DeepSpeed autotuner measures at two micro-batches for the same reason).

#include "core/whatif/calibration/whatifcalibration.h"

#include <string>
#include <vector>

namespace headroom {

struct MultiFit {
    WhatIfBaseline baseline;  ///< the first run's, with its terms refitted
    int runs = 1;             ///< runs used (the first included)
    bool microBatchFit = false; ///< runs at other micro-batches (same sequence) fitted the batch slope
    bool sequenceFit = false;   ///< runs at other sequences (same micro-batch) fitted linear + quadratic
    double constant = 0;      ///< bytes at the start of backward that do not grow with the batch
    double perSample = 0;     ///< bytes per sample of micro-batch (micro-batch fit)
    double linearPerToken = 0, quadraticPerToken2 = 0; ///< per sequence position and its square (sequence fit)
    double residual = 0;      ///< largest |projected - measured| / measured peak over the runs used
    std::vector<std::string> notes; ///< runs left out and why (also in baseline.notes)
};

/// Refits `runs[0]`'s baseline with the others' measured starts of backward. Runs whose
/// configuration (micro-batch, sequence) is unknown, or that move both at once, are left out
/// with a note. Throws std::invalid_argument when `runs` is empty.
MultiFit fitCalibrationRuns(const std::vector<Calibration>& runs, const WhatIfConstants& k = {});

} // namespace headroom
