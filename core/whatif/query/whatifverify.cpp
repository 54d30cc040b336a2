// SPDX-License-Identifier: MIT
#include "core/whatif/query/whatifverify.h"

#include "core/analysis/memoryanalysis.h"
#include "core/util/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace headroom {

LeverConfig configOfAfter(const LeverConfig& given, const LeverMask& moved, const LoadedTrace& after, size_t device)
{
    LeverConfig t = given;
    const StatedConfig read = readTraceConfig(after, device, nullptr);
    if (!moved.microBatch && read.microBatch) t.microBatch = *read.microBatch;
    if (!moved.accum && read.accum) t.accum = *read.accum;
    if (!moved.seq && read.seq) t.seq = *read.seq;
    if (!moved.precision && read.precision) t.precision = *read.precision;
    // headroom_config names the optimizer's family (adamw); whether its step is fused is read
    // from the step's temporaries, as the calibration already read it for BEFORE's run.
    if (!moved.optimizer && read.optimizer &&
        !(*read.optimizer == OptimizerKind::AdamW && t.optimizer == OptimizerKind::AdamWFused))
        t.optimizer = *read.optimizer;
    if (!moved.devices && read.devices) t.devices = *read.devices;
    if (!moved.checkpoint)
        for (const auto& [key, value] : after.snapshot.runConfig) {
            int every = 1;
            if ((key == "checkpoint" || key == "checkpointing") && checkpointFromName(value, t.checkpoint, every))
                t.checkpointEvery = every;
        }
    return t;
}

Verification verifyProjection(const WhatIfBaseline& before, const LeverConfig& target, const WhatIfConstants& k,
                              const DeviceSpec& device, const LoadedTrace& after, size_t afterDevice)
{
    Verification v;
    v.projection = project(before, target, k, device);
    v.measuredPeak = double(after.timelines.at(afterDevice).peakAllocated);
    const double projected = v.projection.peakAllocated;
    v.error = v.measuredPeak > 0 ? (projected - v.measuredPeak) / v.measuredPeak : 0;
    v.bandHolds = v.projection.peakAllocatedLow <= v.measuredPeak && v.measuredPeak <= v.projection.peakAllocatedHigh;
    // The terms are compared where the allocated peak the error is of falls (the total's peak
    // may be elsewhere: the target's cuBLAS workspaces, two after the backward).
    v.phase = v.projection.peakPhase;
    for (const PhaseProjection& ph : v.projection.phases)
        if (ph.present && ph.allocated > v.projection.phases[size_t(v.phase)].allocated)
            v.phase = ph.phase;

    // AFTER read by the same calibration, at the configuration it ran: the same terms, measured.
    try {
        const DeviceAnalysis a = analyzeDevice(after, afterDevice);
        StatedConfig st;
        if (target.microBatch > 0) st.microBatch = target.microBatch;
        if (target.seq > 0) st.seq = target.seq;
        if (target.devices > 0) st.devices = target.devices;
        st.accum = target.accum;
        st.precision = target.precision;
        const Calibration cal = calibrate(after, afterDevice, a, st, before.dims, k);
        const Projection own = project(cal.baseline, cal.baseline.config, k, device);
        const PhaseProjection& p = v.projection.phases[size_t(v.phase)];
        const PhaseProjection& m = own.phases[size_t(v.phase)];
        auto add = [&](const Component& c, bool fromProjection) {
            if (c.name == "fragmentation" || c.name == "outside_allocator")
                return; // not tensors: a snapshot's allocated curve does not hold them
            if (c.name == "cublas_workspaces")
                return; // the target's, added to a recording made off it: the allocated peak above leaves them out
            auto it = std::find_if(v.terms.begin(), v.terms.end(), [&](const TermCheck& t) { return t.name == c.name; });
            if (it == v.terms.end())
                it = v.terms.insert(v.terms.end(), TermCheck{c.name, 0, 0});
            (fromProjection ? it->projected : it->measured) += c.bytes;
        };
        for (const Component& c : p.components)
            add(c, true);
        if (m.present)
            for (const Component& c : m.components)
                add(c, false);
    } catch (const std::exception& e) {
        v.calibrationError = e.what();
    }
    std::stable_sort(v.terms.begin(), v.terms.end(), [](const TermCheck& x, const TermCheck& y) {
        return std::abs(x.projected - x.measured) > std::abs(y.projected - y.measured);
    });
    return v;
}

nlohmann::json verificationJson(const Verification& v)
{
    nlohmann::json terms = nlohmann::json::array();
    for (const TermCheck& t : v.terms)
        terms.push_back({{"name", t.name},
                         {"projected_bytes", int64_t(t.projected)},
                         {"measured_bytes", int64_t(t.measured)},
                         {"difference_bytes", int64_t(t.projected - t.measured)}});
    nlohmann::json j = {{"projected_peak_bytes", int64_t(v.projection.peakAllocated)},
                        {"projected_peak_low_bytes", int64_t(v.projection.peakAllocatedLow)},
                        {"projected_peak_high_bytes", int64_t(v.projection.peakAllocatedHigh)},
                        {"measured_peak_bytes", int64_t(v.measuredPeak)},
                        {"error", v.error},
                        {"band_holds", v.bandHolds},
                        {"phase", std::string(stepPhaseName(v.phase))},
                        {"terms", terms},
                        {"most_off_term", v.terms.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.terms.front().name)}};
    j["terms_unavailable"] = v.calibrationError.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.calibrationError);
    return j;
}

std::string verificationText(const Verification& v)
{
    std::ostringstream o;
    char err[32];
    std::snprintf(err, sizeof err, "%+.1f%%", v.error * 100);
    o << "Verified against the run that followed: projected peak allocated "
      << formatBytes(int64_t(v.projection.peakAllocated)) << " (band " << formatBytes(int64_t(v.projection.peakAllocatedLow))
      << " .. " << formatBytes(int64_t(v.projection.peakAllocatedHigh)) << "), measured "
      << formatBytes(int64_t(v.measuredPeak)) << ": error " << err << ", "
      << (v.bandHolds ? "the band holds it" : "outside the band") << "\n";
    if (!v.calibrationError.empty()) {
        o << "  term by term: unavailable (" << v.calibrationError << ")\n";
        return o.str();
    }
    const std::string_view moment = v.projection.phaseLabel(v.phase);
    o << "  term by term at the " << moment << (moment == "forward" ? "'s peak" : "") << " (projected / measured):\n";
    for (const TermCheck& t : v.terms) {
        if (t.projected == 0 && t.measured == 0)
            continue;
        o << "    " << t.name << ": " << formatBytes(int64_t(t.projected)) << " / " << formatBytes(int64_t(t.measured))
          << (&t == &v.terms.front() ? "  <- most off" : "") << "\n";
    }
    return o.str();
}

} // namespace headroom
