// SPDX-License-Identifier: MIT
#include "core/report/capacityverdict.h"

#include "core/util/units.h"


namespace headroom {

namespace {

/// "the what-if projects 4.52 GiB on the device (3.74 GiB to 6.05 GiB, with ...)".
std::string projectedText(const FitJudgement& j)
{
    return "the what-if projects " + formatBytes(int64_t(j.peak)) + " on the device (" +
           formatBytes(int64_t(j.peakLow)) + " to " + formatBytes(int64_t(j.peakHigh)) +
           (j.outsideLeftOut ? ", with the allocator's cache; the OOM record's capacity leaves the CUDA context out"
                             : ", with the CUDA context and the allocator's cache") +
           (j.wholeStepFromCut ? "; the whole step, which the OOM cut short" : "") + ")";
}

/// "misses by 8.5% (4.06 GiB)": how far, not which lever; the ladder's first move says that.
std::string missText(double peak, int64_t capacity)
{
    const double ratio = peak / double(capacity);
    return "misses by " + (ratio <= 1.5 ? formatPercent(ratio - 1) : formatTimes(ratio)) + " (" +
           formatBytes(int64_t(peak) - capacity) + ")";
}

} // namespace

void judgeCapacityByProjection(Finding& f, const FitJudgement& j)
{
    const std::string projected = projectedText(j);
    const std::string margin = formatPercent(j.margin, 0);
    switch (j.verdict) {
    case Verdict::Fits:
        f.verdict = "fits with " + formatBytes(j.capacity - int64_t(j.peakHigh)) + " to spare at the band's high end "
                    "(more than the " + margin + " margin): " + projected;
        f.firstMove = "nothing needed; the room left allows a larger micro-batch (the what-if panel projects it)";
        return;
    case Verdict::Tight:
        f.verdict = "tight: " + projected + "; its high end " +
                    (j.peakHigh > double(j.capacity) ? "is over the capacity" : "leaves less than the " + margin +
                                                                                   " margin free");
        return;
    case Verdict::DoesNotFit:
        f.verdict = j.peak > double(j.capacity)
                        ? missText(j.peak, j.capacity) + ": " + projected
                        : "does not fit: " + projected + ", and the allocator's simulation of it runs out of memory";
        return;
    case Verdict::Unknown: return;
    }
}

nlohmann::json fitJudgementJson(const FitJudgement& j)
{
    nlohmann::json o = {{"capacity_bytes", j.capacity},
                        {"margin", j.margin},
                        {"limit_bytes", j.limit},
                        {"verdict", verdictName(j.verdict)},
                        {"passed", j.passed()},
                        {"judged_by", j.projected ? "projection" : "allocated_peak"},
                        {"margin_left", j.marginLeft}};
    if (j.projected) {
        o["projected_peak_bytes"] = int64_t(j.peak);
        o["projected_peak_low_bytes"] = int64_t(j.peakLow);
        o["projected_peak_high_bytes"] = int64_t(j.peakHigh);
    }
    return o;
}

} // namespace headroom
