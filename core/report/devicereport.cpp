// SPDX-License-Identifier: MIT
#include "core/report/devicereport.h"

#include "core/report/capacityverdict.h"

#include "core/util/loaderror.h"
#include "core/util/units.h"
#include "core/whatif/query/whatifsession.h"

#include <algorithm>

namespace headroom {

namespace {

std::string costs(const Rung& r)
{
    std::string s;
    for (const auto& [currency, cost] : r.currencies)
        if (cost != "none")
            s += (s.empty() ? "" : "; ") + currency + ": " + cost;
    return s;
}

/// What the replay says, into the fragmentation and capacity findings: an allocator setting
/// costs no code and no throughput, so it comes before any lever of the ladder.
/// `ladderLeads`: the ladder already puts the setting first, so the capacity finding has it.
void adoptAllocatorVerdict(std::vector<Finding>& findings, const AllocatorVerdict& v, bool ladderLeads)
{
    auto find = [&](const char* kind) {
        auto f = std::find_if(findings.begin(), findings.end(), [&](const Finding& x) { return x.kind == kind; });
        return f == findings.end() ? nullptr : &*f;
    };
    Finding* frag = find("fragmentation");
    Finding* cap = find("capacity");
    const std::string replay = v.evidence();
    if (!v.trusted || v.avoidedBy.empty()) {
        if (frag && !replay.empty())
            frag->evidence += "; " + replay;
        return;
    }
    const std::string move = "set PYTORCH_CUDA_ALLOC_CONF=" + v.avoidedBy +
                             ": the allocator replay avoids the OOM, with no code change and no throughput cost";
    if (frag) {
        frag->evidence += "; " + replay;
        frag->firstMove = move;
    }
    if (cap && !ladderLeads)
        cap->firstMove = move + (cap->firstMove.empty() ? "" : "; if it is not enough: " + cap->firstMove);
}

} // namespace

std::string ladderFirstMove(const Ladder& l, const DeviceSpec& device, const std::string& from)
{
    if (l.fitsAsIs || l.rungs.empty())
        return {};
    const std::string cap = formatBytes(device.capacityBytes);
    if (l.firstFit < 0) {
        const Rung& last = l.rungs.back();
        return from + ", the what-if projects " + formatBytes(int64_t(l.start.peak)) + "; no rung of its ladder fits " + cap + ": with every lever it tried (" + last.title +
               " last) the projected peak is still " + formatBytes(int64_t(last.projection.peak)) +
               "; shard across more devices or change the plan (see the what-if's alternatives)";
    }
    const std::string start = from + ", the what-if projects " + formatBytes(int64_t(l.start.peak)) + " (high " +
                              formatBytes(int64_t(l.start.peakHigh)) + ", with the CUDA context and fragmentation); ";
    const size_t fit = size_t(l.firstFit);
    if (fit == 0 && l.rungs[0].kind == RungKind::BatchBudget)
        return start + "that is a steady-state iteration's, and it fits " + cap + ": bound each batch by a token "
               "budget (the peak is an outlier batch); the what-if ladder's first rung";
    if (l.rungs[fit].kind == RungKind::AllocatorSetting && fit == 0) {
        std::string s = "set PYTORCH_CUDA_ALLOC_CONF=" + l.rungs[0].allocatorSetting +
                        ": the allocator replay of the recorded requests avoids the OOM (reserved peak " +
                        formatBytes(int64_t(l.rungs[0].projection.peak)) + " on " + cap +
                        "), with no code change and no throughput cost; the what-if ladder's first rung";
        if (l.rungs.size() > 1 && l.rungs[1].kind == RungKind::BatchBudget)
            s += "; its second, if the margin is not enough: bound each batch by a token budget (the peak is an "
                 "outlier batch; a steady-state iteration projects " + formatBytes(int64_t(l.start.peak)) + ")";
        return s;
    }
    std::string steps;
    for (size_t i = 0; i <= fit; ++i)
        steps += (i == 0 ? "" : i == fit ? ", then " : ", ") + l.rungs[i].title;
    const Rung& r = l.rungs[fit];
    std::string s = start + (fit == 0 ? "the what-if ladder's first rung fits: " : "the what-if ladder fits at rung " +
                                                                              std::to_string(fit + 1) + ": ") +
                    steps + " -> projected peak " + formatBytes(int64_t(r.projection.peak)) + " (high " +
                    formatBytes(int64_t(r.projection.peakHigh)) + ") on " + cap;
    if (const std::string c = costs(r); !c.empty())
        s += "; costs " + c;
    return s;
}

DeviceReport DeviceReport::compute(const LoadedTrace& trace, size_t deviceIndex, const DeviceReportOptions& o)
{
    DeviceReport r;
    r.analysis = analyzeDevice(trace, deviceIndex, {o.cancel, o.categorySeries});
    r.capacity = estimateCapacity(trace, deviceIndex, o.capacity);
    if (o.capacity && !o.capacitySource.empty())
        r.capacity.source = o.capacitySource;
    if (r.capacity.bytes <= 0 && o.defaultCapacity > 0)
        r.capacity = {o.defaultCapacity, "assumed: Preferences or --capacity"};
    r.findings = diagnose(trace, deviceIndex, r.analysis, r.capacity);

    throwIfCancelled(o.cancel);
    r.allocator = AllocatorVerdict::forOom(trace, deviceIndex, o.capacity.value_or(0));
    throwIfCancelled(o.cancel);
    auto capacityFinding = std::find_if(r.findings.begin(), r.findings.end(),
                                        [](const Finding& f) { return f.kind == "capacity"; });
    std::shared_ptr<const WhatIfSession> session;
    try {
        WhatIfQuery q;
        // Borrowed for the calibration (aliasing pointers that own nothing).
        q.measured = {std::shared_ptr<const LoadedTrace>(std::shared_ptr<void>(), &trace), o.stated, nullptr};
        q.device = deviceIndex;
        q.analysis = std::shared_ptr<const DeviceAnalysis>(std::shared_ptr<void>(), &r.analysis);
        q.constants = o.constants;
        session = std::make_shared<const WhatIfSession>(q);
        r.whatIf = session;
    } catch (const std::exception& e) {
        r.calibrationError = e.what();
    }
    if (!session || r.capacity.bytes <= 0 || capacityFinding == r.findings.end()) {
        if (r.allocator)
            adoptAllocatorVerdict(r.findings, *r.allocator, false);
        return r;
    }
    // The capacity finding says what check --fit says of the run as recorded, at the ladder's margin.
    try {
        r.fit = judgeFit(*session, trace.timelines[deviceIndex].peakAllocated, r.capacity.bytes);
        judgeCapacityByProjection(*capacityFinding, *r.fit);
    } catch (const std::runtime_error& e) {
        r.calibrationError = e.what();
    }
    LadderRequest request;
    request.device = whatIfDevice(r.capacity.bytes);
    request.allocator = r.allocator;
    r.ladder = session->ladder(request);
    const DeviceSpec& device = request.device;
    if (const std::string move = ladderFirstMove(*r.ladder, device); !move.empty())
        capacityFinding->firstMove = move;
    if (r.allocator)
        adoptAllocatorVerdict(r.findings, *r.allocator,
                              r.ladder->firstFit >= 0 &&
                                  r.ladder->rungs[size_t(r.ladder->firstFit)].kind == RungKind::AllocatorSetting);
    return r;
}

} // namespace headroom
