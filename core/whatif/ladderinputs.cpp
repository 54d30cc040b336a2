// SPDX-License-Identifier: MIT
#include "core/whatif/ladderinputs.h"

#include "core/whatif/batchratio.h"

namespace headroom {

Calibration ladderCalibration(const Calibration& cal) { return withBatchRatios(cal); }

LadderOptions ladderOptionsFor(const LoadedTrace& trace, const Calibration& cal,
                               const std::optional<AllocatorVerdict>& verdict)
{
    LadderOptions lo;
    // One device's inputs far above the others' is an outlier too: the batch budget comes first.
    lo.outlierBatch = cal.outlierBatch || cal.outlierDevice;
    lo.optimizerStateSuspect = cal.optimizerStateSuspect;
    lo.calibration = &cal;
    lo.simulate = AllocatorConfig::fromSnapshot(trace.snapshot.allocatorSettings);
    lo.cutStep = cal.cutStep;
    if (verdict)
        lo.allocator = verdict->ladderInput();
    return lo;
}

} // namespace headroom
