// SPDX-License-Identifier: MIT
#pragma once

// One number per quantity (issue 45): the headline peak and the breakdown shown beside it
// come from the same engine. Where the replay of every allocation gives the headline, what is
// alive at its peak event is summed by tensor category from the same replay, so the parts add
// up to the headline; the terms model's phases stay available, labelled as the terms'.

#include "core/model/tensorcategory.h"
#include "core/whatif/projection/whatifprojection.h"

#include <vector>

namespace headroom {

/// Fills `p.atPeak` (and `p.atPeakEvent`): for a replayed projection, the replay's live bytes
/// by category at its central peak event plus the fragmentation and the memory outside the
/// allocator the terms put over the tensors; otherwise the terms' peak phase. The parts sum to
/// `p.peak`. Needs `base.categories` for the replay (else falls back to the terms).
void describePeak(Projection& p, const WhatIfBaseline& base);

/// The component name of a category in a breakdown: "parameters", "optimizer_state", ...
std::string_view breakdownName(TensorCategory c);

} // namespace headroom
