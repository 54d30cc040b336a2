// SPDX-License-Identifier: MIT
#include "core/whatif/query/whatifjson.h"

#include "core/util/join.h"

#include "core/whatif/calibration/batchratio.h"
#include "core/whatif/query/whatifsettings.h"

#include "core/util/units.h"
#include "core/whatif/laws/allocationlaw.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace headroom {

namespace {

/// Where the simulated allocator refused a request: an event of the trace, or before it.
std::string oomPlace(const SimulatedReserved& r)
{
    return r.oomEvent >= 0 ? "at event " + std::to_string(r.oomEvent)
                           : std::string("before the trace's first event (what was allocated before it began)");
}

/// A figure of the step time, or null where the trace gave no step time to calibrate on.
nlohmann::json timed(const StepTime& t, double v) { return t.known ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json timeJson(const StepTime& t)
{
    if (!t.known)
        return nullptr;
    return {{"compute_s", t.compute},         {"utilisation_s", t.utilisation}, {"recompute_s", t.recompute},
            {"communication_s", t.communication}, {"offload_s", t.offload},     {"optimizer_s", t.optimizer},
            {"total_s", t.total},             {"tokens_per_step", t.tokensPerStep}, {"relative", t.relative}};
}

/// A size in the unit that suits it: "52.11 GiB" on a GPU, "1.85 MiB" on a small CPU
/// recording (fixed GiB said "0.00 GiB" for every figure there).
static std::string sizeText(double b) { return formatBytes(int64_t(std::llround(b))); }

/// The replay of every allocation behind the allocated peak (null for the terms' projection).
nlohmann::json replayJson(const Projection& p)
{
    if (!p.replayed)
        return nullptr;
    nlohmann::json amb = nlohmann::json::array();
    for (const auto& a : p.ambiguities)
        amb.push_back({{"where", a.where},
                       {"size_each_bytes", a.sizeEach},
                       {"count", a.count},
                       {"central", a.central},
                       {"readings", a.readings},
                       {"evidence", a.evidence},
                       {"shape_recorded", a.shapeRecorded},
                       {"peak_allocated_if_lowest_bytes", int64_t(a.peakIfLowest)},
                       {"peak_allocated_if_highest_bytes", int64_t(a.peakIfHighest)}});
    nlohmann::json j = {{"peak_event", p.replayPeakEvent},
                        {"measured_peak_event", p.measuredPeakEvent},
                        {"checkpointed_blocks", p.replayCheckpointedBlocks},
                        {"autocast", p.replayTarget.autocast},
                        {"dtype_flow", p.replayTarget.dtypeFlow},
                        {"ambiguities", amb}};
    if (p.simulated) {
        const SimulatedReserved& r = *p.simulated;
        j["simulated_reserved"] = {{"peak_bytes", r.peak},
                                   {"peak_event", r.peakEvent},
                                   {"capacity_bytes", r.capacity},
                                   {"expandable_segments", r.expandableSegments},
                                   {"oom", r.refused()},
                                   {"oom_event", r.oomEvent},
                                   {"oom_request_bytes", r.oomSize},
                                   {"oom_reserved_bytes", r.oomReserved}};
    }
    return j;
}

/// What would settle an ambiguity: a run that moves the lever its readings differ in.
/// "device 80 GiB (H100 SXM) 80.00 GiB"; a capacity no preset has is named by its size already
/// ("56.00 GiB device (48 GiB (L40S class) speeds)"), and said once.
std::string deviceText(const DeviceSpec& device, int64_t capacity)
{
    const std::string cap = sizeText(double(capacity));
    return device.name.rfind(cap, 0) == 0 ? device.name : "device " + device.name + " " + cap;
}

/// Why the central reading was taken, where the evidence's name alone says too little.
std::string evidenceText(const std::string& evidence)
{
    if (evidence == "cast")
        return " (half a weight, one per weight: its autocast cast)";
    if (evidence == "gradient")
        return " (a gradient of its size kept from before: the weight's incoming gradient, added into it)";
    return " (by its " + evidence + ")";
}

std::string settleText(const ProjectedAmbiguity& a)
{
    return std::string(a.shapeRecorded ? "the recorded shape allows each; add a run at another "
                                       : "record with shapes, or add a run at another ") +
           (settledBySequence(a) ? "sequence length" : "micro-batch");
}

} // namespace

bool settledBySequence(const ProjectedAmbiguity& a)
{
    // A quadratic reading (scores, masks: "b*s^2", "b*(s+1)^2", "s^2") is what a second
    // sequence length tells apart.
    for (const auto& r : a.readings)
        if (r.size() > 2 && r.compare(r.size() - 2, 2, "^2") == 0)
            return true;
    return false;
}

nlohmann::json projectionJson(const Projection& p, const std::vector<MeasuredItem>& measured, const WhatIfConstants& k,
                              const DeviceSpec& device)
{
    nlohmann::json j;
    j["peak_bytes"] = int64_t(p.peak);
    j["peak_low_bytes"] = int64_t(p.peakLow);
    j["peak_high_bytes"] = int64_t(p.peakHigh);
    j["peak_allocated_bytes"] = int64_t(p.peakAllocated);
    j["peak_allocated_low_bytes"] = int64_t(p.peakAllocatedLow);
    j["peak_allocated_high_bytes"] = int64_t(p.peakAllocatedHigh);
    j["peak_phase"] = std::string(stepPhaseName(p.peakPhase));
    j["fits"] = p.fits;
    j["verdict"] = std::string(verdictName(p.verdict));
    j["verdict_by"] = p.simulated && p.capacity > 0 ? "simulation" : "ratio";
    if (p.verdictByRatio != Verdict::Unknown)
        j["verdict_by_ratio"] = std::string(verdictName(p.verdictByRatio));
    j["capacity_bytes"] = int64_t(p.capacity);
    j["margin"] = p.margin;
    j["device"] = device.name;
    j["terms_peak_bytes"] = int64_t(p.termsPeak);
    if (!p.atPeak.empty()) {
        nlohmann::json parts = nlohmann::json::object();
        for (const Component& c : p.atPeak)
            parts[c.name] = int64_t(c.bytes);
        j["at_peak"] = {{"engine", p.atPeakEvent >= 0 ? "replay" : "terms"},
                        {"event", p.atPeakEvent},
                        {"components", parts}};
    } else {
        j["at_peak"] = nullptr;
    }
    j["step_time_s"] = timed(p.time, p.time.total);
    j["tokens_per_s"] = throughputKnown(p) ? nlohmann::json(p.time.tokensPerSecond) : nlohmann::json(nullptr);
    j["relative_step_time"] = timed(p.time, p.time.relative);
    j["step_time"] = timeJson(p.time);
    j["config"] = leverConfigJson(p.config);
    if (p.microBatchUnits > 0) { // a ratio of the measured run, not a count
        j["config"]["micro_batch"] = nullptr;
        j["config"]["effective_batch"] = nullptr;
        j["config"]["micro_batch_ratio"] = double(p.config.microBatch) / p.microBatchUnits;
    }
    nlohmann::json m = nlohmann::json::object();
    for (const auto& it : measured)
        m[it.key] = {{"value", it.value}, {"how", it.how}, {"detail", it.detail}};
    j["measured"] = m;
    nlohmann::json phases = nlohmann::json::object(), details = nlohmann::json::object();
    for (const auto& ph : p.phases) {
        if (!ph.present)
            continue;
        nlohmann::json comps = nlohmann::json::object(), list = nlohmann::json::array();
        for (const auto& c : ph.components) {
            comps[c.name] = int64_t(c.bytes);
            list.push_back({{"name", c.name},
                            {"bytes", int64_t(c.bytes)},
                            {"provenance", std::string(provenanceName(c.provenance))},
                            {"rel_err", c.relErr},
                            {"rel_err_high", c.highErr()}});
        }
        const std::string name(stepPhaseName(ph.phase));
        phases[name] = comps;
        details[name] = {{"allocated_bytes", int64_t(ph.allocated)},
                         {"total_bytes", int64_t(ph.total)},
                         {"low_bytes", int64_t(ph.low)},
                         {"high_bytes", int64_t(ph.high)},
                         {"components", list}};
        if (ph.measured >= 0)
            details[name]["measured_allocated_bytes"] = int64_t(ph.measured);
        if (ph.measuredEvent >= 0) {
            details[name]["measured_event"] = ph.measuredEvent;
            details[name]["measured_event_phase"] = ph.measuredEventPhase;
        }
    }
    j["phases"] = phases;
    j["phase_details"] = details;
    j["notes"] = p.notes;
    j["replay"] = replayJson(p);
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : WhatIfConstants::entries())
        a.push_back({{"key", e.key}, {"value", k.*(e.member)}, {"unit", e.unit}, {"guess", e.guess}, {"source", e.source}});
    j["assumptions"] = a;
    return j;
}

nlohmann::json ladderJson(const Ladder& l)
{
    nlohmann::json j;
    nlohmann::json rungs = nlohmann::json::array();
    for (const auto& r : l.rungs) {
        nlohmann::json cur = nlohmann::json::object();
        for (const auto& [c, v] : r.currencies)
            cur[c] = v;
        rungs.push_back({{"title", r.title},
                         {"levers", r.levers},
                         {"config", leverConfigJson(r.config)},
                         {"peak_bytes", int64_t(r.projection.peak)},
                         {"peak_high_bytes", int64_t(r.projection.peakHigh)},
                         {"peak_phase", std::string(stepPhaseName(r.projection.peakPhase))},
                         {"fits", r.projection.fits},
                         {"verdict", std::string(verdictName(r.projection.verdict))},
                         {"kind", std::string(rungKindName(r.kind))},
                         {"step_time_s", timed(r.projection.time, r.projection.time.total)},
                         {"tokens_per_s", throughputKnown(r.projection) ? nlohmann::json(r.projection.time.tokensPerSecond)
                                                                        : nlohmann::json(nullptr)},
                         {"currencies", cur},
                         {"changes_result", r.changesResult},
                         {"numerical_risk", r.numericalRisk},
                         {"warnings", r.warnings}});
        if (!r.allocatorSetting.empty())
            rungs.back()["allocator_setting"] = r.allocatorSetting;
    }
    j["rungs"] = rungs;
    j["first_fit"] = l.firstFit;
    j["fits_as_is"] = l.fitsAsIs;
    j["bottleneck"] = l.bottleneck;
    j["needs_different_plan"] = l.needsDifferentPlan;
    j["warnings"] = l.warnings;
    j["start"] = {{"peak_bytes", int64_t(l.start.peak)},
                  {"peak_high_bytes", int64_t(l.start.peakHigh)},
                  {"peak_phase", std::string(stepPhaseName(l.start.peakPhase))},
                  {"fits", l.start.fits},
                  {"step_time_s", timed(l.start.time, l.start.time.total)}};
    nlohmann::json alts = nlohmann::json::array();
    for (const auto& a : l.alternatives)
        alts.push_back({{"currency", a.currency},
                        {"title", a.title},
                        {"peak_bytes", int64_t(a.projection.peak)},
                        {"peak_high_bytes", int64_t(a.projection.peakHigh)},
                        {"fits", a.projection.fits},
                        {"step_time_s", timed(a.projection.time, a.projection.time.total)}});
    j["alternatives"] = alts;
    return j;
}

std::string projectionText(const Projection& p, const std::vector<MeasuredItem>& measured, const DeviceSpec& device)
{
    std::ostringstream o;
    if (!measured.empty()) {
        o << "Measured at:\n";
        for (const auto& m : measured)
            if (m.key != "optimizer_bytes")
                o << "  " << m.key << " = " << (m.value.empty() ? "unknown" : m.value) << "  [" << m.how
                  << (m.detail.empty() ? "" : ": " + m.detail) << "]\n";
    }
    const auto& c = p.config;
    const std::string precision(precisionName(c.precision));
    const std::string checkpoint(checkpointName(c.checkpoint, c.checkpointEvery));
    const std::string devices = std::to_string(c.devices);
    const std::string flash = c.flashAttention ? "on" : "off";
    o << "Projected for: micro-batch " << microBatchText(c.microBatch, p.microBatchUnits) << " x accum " << countText(c.accum) << ", seq "
      << countText(c.seq) << ", " << precision << assumedSuffix(measured, "precision", precision) << ", "
      << optimizerName(c.optimizer) << ", checkpoint " << checkpoint << assumedSuffix(measured, "checkpointing", checkpoint)
      << ", ZeRO " << c.zero << " over " << devices << assumedSuffix(measured, "devices", devices) << ", offload "
      << offloadName(c.offload) << ", flash " << flash << assumedSuffix(measured, "flash_attention", flash) << "\n\n";
    // The headline's engine speaks first; the terms' phases follow, labelled, where the replay
    // gave the headline (they are the model's own totals, not the headline's parts).
    if (p.replayed)
        o << "Terms model by phase (not the headline: the replay below resizes every recorded allocation; the terms "
             "resize a few totals), its peak "
          << sizeText(p.termsPeak) << " in the " << p.phaseLabel(p.termsPeakPhase) << ":\n";
    for (const auto& ph : p.phases) {
        if (!ph.present)
            continue;
        o << p.phaseLabel(ph.phase) << (ph.phase == p.peakPhase && !p.replayed ? "  <- peak" : "") << ": "
          << sizeText(ph.total) << " ("
          << sizeText(ph.low) << " .. " << sizeText(ph.high) << ")";
        if (ph.measured >= 0)
            o << ", measured allocated " << sizeText(ph.measured);
        if (ph.measuredEvent >= 0)
            o << " at event " << ph.measuredEvent << " (" << ph.measuredEventPhase << ")";
        o << "\n";
        for (const auto& comp : ph.components)
            o << "    " << comp.name << ": " << sizeText(comp.bytes) << " [" << provenanceName(comp.provenance) << "]\n";
    }
    o << "\nPeak " << sizeText(p.peak) << " (band " << sizeText(p.peakLow) << " .. " << sizeText(p.peakHigh) << ") "
      << (p.replayed ? "at event " + std::to_string(p.replayPeakEvent) + " of the trace, by the replay of every allocation"
                     : "in the " + std::string(p.phaseLabel(p.peakPhase)))
      << "; ";
    if (p.capacity > 0)
        o << deviceText(device, p.capacity) << ": " << verdictName(p.verdict) << " (judged with a "
          << int(p.margin * 100) << "% safety margin)\n" << reservedVerdictText(p);
    else
        o << device.name << "\n"; // "capacity unknown (give --capacity; ...)": no verdict to give

    if (!p.atPeak.empty()) {
        o << "At the peak (" << (p.atPeakEvent >= 0 ? "replay" : "terms") << "):";
        for (const Component& c : p.atPeak)
            o << " " << c.name << " " << sizeText(c.bytes) << ";";
        o << " = " << sizeText(p.peak) << "\n";
    }
    if (p.replayed) {
        o << "Allocated peak " << sizeText(p.peakAllocated) << " (band " << sizeText(p.peakAllocatedLow) << " .. "
          << sizeText(p.peakAllocatedHigh) << "): every allocation of the trace replayed with its law";
        if (p.replayPeakEvent >= 0)
            o << "; at event " << p.replayPeakEvent << " of the trace";
        if (p.measuredPeakEvent >= 0)
            o << " (the measured peak: event " << p.measuredPeakEvent << ")";
        o << "\n";
        if (p.simulated) {
            const SimulatedReserved& r = *p.simulated;
            o << "Simulated reserved memory (the caching allocator, expandable_segments "
              << (r.expandableSegments ? "on" : "off") << "): ";
            if (r.refused())
                o << "OOM " << oomPlace(r) << " of the projected run: a request of " << formatBytes(r.oomSize)
                  << " with " << sizeText(double(r.oomReserved)) << " reserved of " << sizeText(double(r.capacity)) << "\n";
            else
                o << "peak " << sizeText(double(r.peak))
                  << (r.peakEvent >= 0 ? " at event " + std::to_string(r.peakEvent) : std::string()) << "\n";
        }
        for (const auto& a : p.ambiguities) {
            o << "Ambiguous: " << a.count << " x " << formatBytes(a.sizeEach) << " from " << a.where << " read as "
              << a.central
              << evidenceText(a.evidence)
              << ", also";
            for (const auto& r : a.readings)
                if (r != a.central)
                    o << " " << r;
            o << ": " << sizeText(a.peakIfLowest) << " .. " << sizeText(a.peakIfHighest) << " allocated; " << settleText(a) << "\n";
        }
    }
    o << "Step time " << stepTimeText(p) << "\n";
    for (const auto& n : p.notes)
        o << "Note: " << n << "\n";
    return o.str();
}

std::string reservedVerdictText(const Projection& p)
{
    // The verdict is the simulation's where it overruled the fragmentation ratio: one sentence
    // that says both, so neither reads as the answer alone.
    if (!p.simulated || p.verdictByRatio == Verdict::Unknown)
        return {};
    const SimulatedReserved& r = *p.simulated;
    const std::string byRatio(verdictName(p.verdictByRatio));
    if (!r.refused())
        return "Tight by the caching allocator's simulation: every request of the projected run is served within the " +
               sizeText(double(r.capacity)) + " the allocator may take (reserved peak " + sizeText(double(r.peak)) +
               "), where the allocated peak and a fragmentation ratio said " + byRatio + "\n";
    return "Does not fit by the caching allocator's simulation (" + byRatio +
           " by allocated memory and a fragmentation ratio): the projected run's requests fail " +
           oomPlace(r) + ": a request of " + formatBytes(r.oomSize) + " with " +
           sizeText(double(r.oomReserved)) + " reserved of the " + sizeText(double(r.capacity)) +
           " the allocator may take (OOM; memory cached in blocks too small for it: try expandable_segments)\n";
}

std::string ladderText(const Ladder& l)
{
    std::ostringstream o;
    o << "Start: " << sizeText(l.start.peak) << " (high " << sizeText(l.start.peakHigh) << "), " << verdictName(l.start.verdict)
      << "\n";
    if (!l.bottleneck.empty()) // none where no lever is climbed (it fits, or a setting or budget does)
        o << "Bottleneck: " << l.bottleneck << "\n";
    for (const auto& w : l.warnings)
        o << "Warning: " << w << "\n";
    if (l.fitsAsIs)
        o << "It fits as it is.\n";
    for (size_t i = 0; i < l.rungs.size(); ++i) {
        const Rung& r = l.rungs[i];
        o << i + 1 << ". " << r.title << ": " << sizeText(r.projection.peak) << " (high " << sizeText(r.projection.peakHigh)
          << ") " << verdictName(r.projection.verdict);
        o << ", " << rungTimeText(r.projection) << "\n   sets: " << (r.levers.empty() ? std::string("nothing new") : joinWith(r.levers, ", "))
          << (i > 0 ? "; keeps the settings of rung" + std::string(i > 1 ? "s 1-" : " ") + std::to_string(i) : std::string())
          << "\n   ";
        for (const auto& [c, v] : r.currencies)
            o << c << ": " << v << "; ";
        o << "\n";
        for (const auto& w : r.warnings)
            o << "   ! " << w << "\n";
    }
    if (!l.fitsAsIs)
        o << (l.firstFit >= 0 ? "First fit: rung " + std::to_string(l.firstFit + 1) + "\n" : "No rung fits.\n");
    if (!l.alternatives.empty())
        o << "Alternatives by currency:\n";
    for (const auto& a : l.alternatives)
        o << "  " << a.currency << ": " << a.title << " -> " << sizeText(a.projection.peak) << ", "
          << verdictName(a.projection.verdict) << "\n";
    return o.str();
}

std::string countText(int value) { return value > 0 ? std::to_string(value) : std::string("unknown"); }

std::string assumedSuffix(const std::vector<MeasuredItem>& measured, std::string_view key, std::string_view shown)
{
    for (const MeasuredItem& m : measured) {
        if (m.key != key)
            continue;
        if (m.value.empty())
            return " (not measured: the trace does not tell it)";
        if (m.how == "assumed" && m.value == shown)
            return " (assumed)";
        return {};
    }
    return {};
}

bool throughputKnown(const Projection& p)
{
    const LeverConfig& c = p.config;
    return p.time.known && p.microBatchUnits <= 0 && c.microBatch > 0 && c.seq > 0 && c.devices > 0;
}

std::string stepTimeText(const Projection& p)
{
    if (!p.time.known)
        return "unknown: the trace has no step time (no timestamps over a whole iteration)";
    char buf[200];
    if (throughputKnown(p))
        std::snprintf(buf, sizeof buf, "%.3f s (x%.2f), %.0f tokens/s", p.time.total, p.time.relative,
                      p.time.tokensPerSecond);
    else
        std::snprintf(buf, sizeof buf,
                      "%.3f s (x%.2f); tokens/s needs the measured micro-batch, sequence and devices", p.time.total,
                      p.time.relative);
    return buf;
}

std::string rungTimeText(const Projection& p)
{
    if (!p.time.known || p.time.total <= 0)
        return "step time unknown";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f s/step", p.time.total);
    return buf;
}

std::string_view rungKindName(RungKind k)
{
    switch (k) {
    case RungKind::AllocatorSetting: return "allocator_setting";
    case RungKind::BatchBudget: return "batch_budget";
    case RungKind::Lever: break;
    }
    return "lever";
}

} // namespace headroom
