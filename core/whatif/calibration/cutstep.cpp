// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/cutstep.h"

#include "core/util/units.h"

#include <algorithm>

namespace headroom {

void projectWholeStep(Projection& p, double cutAllocated, const CutStep& cut)
{
    if (cutAllocated <= 0)
        return;
    const double share = p.peakAllocated / cutAllocated;
    p.wholeStepFromCut = true;
    const double outside = std::max(0.0, p.peak - p.peakAllocated);
    const double outsideHigh = std::max(0.0, p.peakHigh - p.peakAllocatedHigh);
    const double low = std::max(double(cut.lowerBound), double(cut.wholeLow)) * share;
    const bool highKnown = cut.wholeHigh > 0;
    const double high = double(highKnown ? cut.wholeHigh : 0) * share;
    p.peakAllocated = std::max(p.peakAllocated, low);
    p.peakAllocatedLow = std::max(p.peakAllocatedLow, low);
    p.peakAllocatedHigh = std::max(p.peakAllocatedHigh, std::max(low, high));
    p.peak = std::max(p.peak, low + outside);
    p.peakLow = std::max(p.peakLow, low + outside);
    p.peakHigh = std::max(p.peakHigh, std::max(low, high) + outsideHigh);
    const std::string whole = "the OOM cut the step short in its " + cut.phase + ": the whole step needs " +
                              (highKnown ? formatBytes(int64_t(low)) + " to " + formatBytes(int64_t(high))
                                         : "more than " + formatBytes(int64_t(low))) +
                              " here, scaled from the diagnosis's band";
    if (p.capacity <= 0) {
        p.notes.push_back(whole);
        return;
    }
    // The whole step's band is judged again with the margin; with no high end known, no margin
    // is shown to be free.
    p.marginLeft = highKnown ? std::min(p.marginLeft, marginLeft(p.peakHigh, p.judgedContext, p.capacity)) : kFitsNoMargin;
    if (p.peak > p.capacity) {
        p.verdict = Verdict::DoesNotFit;
        p.notes.push_back(whole);
    } else if (!highKnown || p.marginLeft < p.margin) {
        p.verdict = Verdict::Tight;
        p.notes.push_back(whole + "; it may fit: a record of the complete step at a smaller batch, or another "
                                  "device's complete step, settles it");
    } else {
        p.notes.push_back(whole);
    }
    p.fits = p.verdict == Verdict::Fits;
}

} // namespace headroom
