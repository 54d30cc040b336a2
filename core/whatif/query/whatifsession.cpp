// SPDX-License-Identifier: MIT
#include "core/whatif/query/whatifsession.h"

#include "core/analysis/diagnosis.h"

#include "core/whatif/calibration/batchratio.h"
#include "core/whatif/calibration/cutstep.h"
#include "core/whatif/projection/peakbreakdown.h"
#include "core/whatif/projection/projectedallocator.h"

namespace headroom {

namespace {

Calibration calibrated(const CalibrationRun& run, size_t device, const DeviceAnalysis* analysis,
                       const ModelDims& dims, const WhatIfConstants& k)
{
    if (run.calibrated)
        return *run.calibrated;
    if (analysis)
        return calibrate(*run.trace, device, *analysis, run.stated, dims, k);
    return calibrate(*run.trace, device, analyzeDevice(*run.trace, device), run.stated, dims, k);
}

/// `b` judged on the OOM record's capacity: that capacity is what the allocator could have had
/// (reserved + the device's free memory), so the CUDA context, NCCL and other processes are
/// already outside it and the projection counts none of them again.
WhatIfBaseline withoutOutside(const WhatIfBaseline& b)
{
    WhatIfBaseline o = b;
    o.context = o.contextHigh = 0;
    o.contextProvenance = Provenance::Measured;
    if (o.lateBackward) {
        auto late = std::make_shared<WhatIfState>(*o.lateBackward);
        late->context = late->contextHigh = 0;
        late->contextProvenance = Provenance::Measured;
        o.lateBackward = std::move(late);
    }
    o.notes.push_back("the capacity is the OOM record's (reserved + the device's free memory): what lies outside "
                      "the allocator (the CUDA context, NCCL, other processes) is already left out of it, so the "
                      "projection counts none");
    return o;
}

} // namespace

DeviceSpec whatIfDevice(int64_t capacity, const std::optional<DeviceSpec>& preset)
{
    if (!preset)
        return deviceForCapacity(capacity);
    DeviceSpec d = *preset;
    if (capacity > 0)
        d.capacityBytes = capacity;
    return d;
}

WhatIfSession::WhatIfSession(const WhatIfQuery& q)
    : m_k(q.constants)
{
    if (!q.measured.trace) {
        m_analytic = analyticBaseline(q.dims, q.start, m_k);
        return;
    }
    m_cal = calibrated(q.measured, q.device, q.analysis.get(), q.dims, m_k);
    if (!q.others.empty()) {
        std::vector<Calibration> runs{*m_cal};
        for (const CalibrationRun& other : q.others)
            runs.push_back(calibrated(other, q.device, nullptr, q.dims, m_k));
        m_fit = fitCalibrationRuns(runs, m_k);
        if (m_fit->microBatchFit || m_fit->sequenceFit)
            m_cal->baseline = m_fit->baseline;
    }
    m_ratioCal = withBatchRatios(*m_cal);
    m_recordedAllocator = AllocatorConfig::fromSnapshot(q.measured.trace->snapshot.allocatorSettings);
    if (!q.measured.trace->snapshot.devices[q.device].ooms.empty()) {
        m_oomCapacity = estimateCapacity(*q.measured.trace, q.device, std::nullopt).bytes;
        m_oomBase = withoutOutside(m_cal->baseline);
        m_oomRatioBase = withoutOutside(m_ratioCal->baseline);
    }
}

const WhatIfBaseline& WhatIfSession::baselineOn(const DeviceSpec& device, BatchUnits units) const
{
    if (m_oomCapacity > 0 && device.capacityBytes == m_oomCapacity)
        return units == BatchUnits::Ratios ? *m_oomRatioBase : *m_oomBase;
    return baseline(units);
}

const WhatIfBaseline& WhatIfSession::baseline(BatchUnits units) const
{
    if (!m_cal)
        return m_analytic;
    return units == BatchUnits::Ratios ? m_ratioCal->baseline : m_cal->baseline;
}

Projection WhatIfSession::project(const LeverConfig& target, const DeviceSpec& device, BatchUnits units,
                                  Simulation simulation) const
{
    const WhatIfBaseline& base = baselineOn(device, units);
    if (m_cal)
        (units == BatchUnits::Ratios ? *m_ratioCal : *m_cal).require(target);
    const bool simulate = m_cal && simulation == Simulation::Now;
    auto projected = [&](const LeverConfig& c) {
        Projection p = headroom::project(base, c, m_k, device);
        if (simulate)
            simulateReserved(p, base, m_recordedAllocator);
        return p;
    };
    Projection p = projected(target);
    p.outsideLeftOut = m_oomBase && (&base == &*m_oomBase || &base == &*m_oomRatioBase);
    if (m_cal && m_cal->cutStep) {
        // The whole step of a run the OOM cut short: scaled by what the cut part of the
        // measured configuration projects to.
        const double cutAllocated = target == base.config ? p.peakAllocated : projected(base.config).peakAllocated;
        projectWholeStep(p, cutAllocated, *m_cal->cutStep);
    }
    describePeak(p, base);
    return p;
}

LadderOptions WhatIfSession::ladderOptions(const LadderRequest& r) const
{
    LadderOptions lo;
    lo.currencyOrder = r.currencyOrder;
    lo.availableDevices = r.availableDevices;
    if (!m_ratioCal)
        return lo;
    const Calibration& cal = *m_ratioCal;
    // One device's inputs far above the others' is an outlier too: the batch budget comes first.
    lo.outlierBatch = cal.outlierBatch || cal.outlierDevice;
    lo.optimizerStateSuspect = cal.optimizerStateSuspect;
    lo.calibration = &cal;
    lo.simulate = m_recordedAllocator;
    lo.cutStep = cal.cutStep;
    if (r.allocator)
        lo.allocator = r.allocator->ladderInput();
    return lo;
}

Ladder WhatIfSession::ladder(const LadderRequest& r) const
{
    const WhatIfBaseline& base = baselineOn(r.device, BatchUnits::Ratios);
    LeverConfig start = r.start.value_or(base.config);
    if (r.startUnits == BatchUnits::Measured && base.microBatchUnits > 0)
        start.microBatch = base.config.microBatch; // the measured run's, counted in ratios
    Ladder l = buildLadder(base, start, m_k, r.device, ladderOptions(r));
    if (m_oomRatioBase && &base == &*m_oomRatioBase) {
        l.start.outsideLeftOut = true;
        for (Rung& rung : l.rungs)
            rung.projection.outsideLeftOut = true;
    }
    return l;
}

Verification WhatIfSession::verify(const LoadedTrace& after, size_t afterDevice, const LeverConfig& target,
                                   const LeverMask& moved, const DeviceSpec& device, BatchUnits units) const
{
    const LeverConfig t = configOfAfter(target, moved, after, afterDevice);
    if (m_cal)
        (units == BatchUnits::Ratios ? *m_ratioCal : *m_cal).require(t);
    return verifyProjection(baselineOn(device, units), t, m_k, device, after, afterDevice);
}

} // namespace headroom
