// SPDX-License-Identifier: MIT
#pragma once

// Laws measured across runs of one job (docs/whatif-model.md, "Several runs"): the same line
// of code in two runs at another sequence length (or micro-batch) says how its tensors grow,
// which a single snapshot can only bound.

#include "core/whatif/replay/traceprojector.h"

#include <memory>
#include <string>
#include <vector>

namespace headroom {

struct RunLawsFit {
    std::shared_ptr<const TraceProjector> projector; ///< the first run's history, laws settled
    int64_t linesMatched = 0;    ///< lines of code found in both runs and fitted
    int64_t settled = 0;         ///< allocations of the first run whose law a run measured
    std::vector<std::string> notes;
};

/// Matches each other run to `first` line by line: a line with as many allocations in both runs
/// pairs them in order, else its distinct sizes in order with its allocations per iteration; the
/// exponent of the lever the run moved is the nearest whole one (0, 1 or 2) within 0.2. Runs
/// that move both levers, or neither, are left out.
RunLawsFit fitLawsAcrossRuns(const TraceProjector& first, const std::vector<const TraceProjector*>& others);

} // namespace headroom
