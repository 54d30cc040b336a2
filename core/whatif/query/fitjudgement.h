// SPDX-License-Identifier: MIT
#pragma once

// Does the recorded run fit a device of this capacity with this share of it free? One answer
// for `check --fit` and every other view (issue 45, item 4): the what-if's projection of the run
// as it was recorded, at that capacity and margin, so the CUDA context, the allocator's
// fragmentation, an OOM's whole step and the band count as they count in whatif, the ladder, the
// panel and the diagnosis. A file the what-if cannot calibrate on (a profiler timeline, a trace
// with no step) is judged by its allocated peak, and the judgement says so.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/vocabulary/whatifmodel.h"
#include "core/whatif/query/whatifsession.h"

#include <cstdint>
#include <memory>
#include <string>

namespace headroom {

struct FitJudgement {
    /// Judged on the what-if's projection of the run as recorded; false: on the allocated peak.
    bool projected = false;
    Verdict verdict = Verdict::Unknown; ///< the projection's; Fits or DoesNotFit on the allocated peak
    int64_t capacity = 0;
    double margin = 0;
    int64_t peakAllocated = 0; ///< the recorded peak (the allocated fallback's value)
    int64_t limit = 0;         ///< the allocated fallback's limit: capacity less the margin
    /// The projection is of the whole step an OOM cut short (Projection::wholeStepFromCut).
    bool wholeStepFromCut = false;
    bool outsideLeftOut = false; ///< Projection::outsideLeftOut: the OOM record's capacity, no context counted
    double peak = 0, peakLow = 0, peakHigh = 0; ///< the projection's headline and band
    /// The largest margin it passes with (Projection::marginLeft; on the allocated peak, the
    /// share of the capacity it leaves free): passed() exactly when this is at least `margin`.
    double marginLeft = kFitsNoMargin;
    /// What the margin leaves out of the capacity (Projection::judgedContext; 0 on the allocated
    /// peak): the high end passes margin m when it is at most context + (capacity - context) x (1 - m).
    double judgedContext = 0;
    /// Why the allocated peak judged it: the what-if's refusal, in its words. On the allocated
    /// peak, a peak over the limit but within the capacity is Tight.
    std::string notProjectedBecause;
    /// Only "fits" passes: "tight" does not leave the margin free at the band's high end.
    bool passed() const { return verdict == Verdict::Fits; }
};

/// The allocated fallback's marginLeft: the share of `capacity` that `peakAllocated` leaves free.
inline double allocatedMarginLeft(int64_t peakAllocated, int64_t capacity)
{
    return capacity > 0 ? 1.0 - double(peakAllocated) / double(capacity) : kFitsNoMargin;
}

/// The run as recorded, as `session` projects it at `capacity` with its own margin (the one the
/// ladder and the panel judge with). Throws what WhatIfSession::project throws.
FitJudgement judgeFit(const WhatIfSession& session, int64_t peakAllocated, int64_t capacity);
/// The fallback where the what-if cannot project: the allocated peak against the capacity less
/// the margin; `because` is the what-if's refusal.
FitJudgement judgeAllocatedPeak(int64_t peakAllocated, int64_t capacity, double margin, const std::string& because);

/// `a` is the device's analysis (its timeline's peak is the recorded one).
FitJudgement judgeFit(const std::shared_ptr<const LoadedTrace>& trace, size_t deviceIndex, const DeviceAnalysis& a,
                      int64_t capacity, double margin);

} // namespace headroom
