// SPDX-License-Identifier: MIT
#pragma once

// The capacity finding's verdict from the same judgement `check --fit`, the budget, the what-if
// and its ladder give: the run as recorded, projected on the device with the CUDA context and the
// allocator's cache. The diagnosis alone judges the allocated peak; a device report that can
// project words the finding from the projection instead, so that one screen never says "fits
// with 1 GiB of headroom" beside a ladder (and a check) that says it does not fit.

#include "core/analysis/finding.h"
#include "core/whatif/query/fitjudgement.h"

#include <nlohmann/json.hpp>

namespace headroom {

/// Rewrites `capacity`'s verdict (and, when it fits, its first move) from `fit`, a projected
/// judgement; the allocated peak's figures stay in the evidence.
void judgeCapacityByProjection(Finding& capacity, const FitJudgement& fit);

/// `fit`'s figures as check --fit's JSON and analyze's `fit` give them: capacity_bytes, margin,
/// limit_bytes, verdict, passed, judged_by, margin_left and, projected, the band.
nlohmann::json fitJudgementJson(const FitJudgement& fit);

} // namespace headroom
