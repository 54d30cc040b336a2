// SPDX-License-Identifier: MIT
#include "core/report/analysisreport.h"

#include "core/report/capacityverdict.h"
#include "core/analysis/summary.h"

#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/moduleforward.h"
#include "core/analysis/summary.h"
#include "core/report/devicereport.h"
#include "core/report/postmortemmarkdown.h"
#include "core/util/textlayout.h"
#include "core/util/units.h"

#include <sstream>

namespace headroom {

namespace {

nlohmann::json categoryMap(const Breakdown& b)
{
    nlohmann::json m = nlohmann::json::object();
    for (size_t i = 0; i < static_cast<size_t>(kTensorCategoryCount); ++i)
        m[std::string(categoryLowerName(static_cast<TensorCategory>(i)))] = b.byCategory[i];
    return m;
}

nlohmann::json phaseMap(const Breakdown& b)
{
    nlohmann::json m = nlohmann::json::object();
    for (size_t i = 0; i < kPhaseCount; ++i)
        m[std::string(phaseKey(static_cast<Phase>(i)))] = b.byPhase[i];
    return m;
}

void printFailingRequests(std::ostream& os, const nlohmann::json& requests)
{
    for (const auto& r : requests) {
        os << "  failing request at event " << r["event_index"].get<int64_t>() << ": "
           << formatBytes(r["size"].get<int64_t>()) << " with " << formatBytes(r["device_free"].get<int64_t>())
           << " free on the device\n";
        if (r["frames"].empty())
            os << "        (the OOM record carries no frames)\n";
        for (const auto& f : r["frames"])
            os << "        " << f.get<std::string>() << "\n";
    }
}

void printGroups(std::ostream& os, const nlohmann::json& g)
{
    os << "\n  alive at the peak by the code that allocated it (" << g["by_stack"].size() << " of "
       << g["stack_groups"].get<size_t>() << " sites):\n"
       << liveGroupRowsText(g);
}

void printModules(std::ostream& os, const nlohmann::json& g)
{
    const int64_t under = g["module_bytes"].get<int64_t>(), named = g["recorded_module_bytes"].get<int64_t>();
    os << "\n  alive at the peak by module: " << formatBytes(under) << " of " << formatBytes(g["bytes"].get<int64_t>())
       << " attributed to a module";
    const int64_t tagged = g.value("metadata_module_bytes", int64_t(0));
    if (named > 0)
        os << ", " << formatBytes(named) << " named by the recorder";
    if (tagged > 0)
        os << ", " << formatBytes(tagged) << " by user_metadata";
    os << (under > named + tagged ? (named + tagged > 0 ? ", the rest by the frame Module._call_impl called" : ", by the frame Module._call_impl called (no recorder names in the file)") : "")
       << ":\n";
    if (g["by_module"].empty())
        os << "    (no module frames and no recorded module names)\n";
    for (const auto& m : g["by_module"]) {
        const std::string name = m["name"].get<std::string>();
        os << "    " << formatBytes(m["bytes"].get<int64_t>()) << " in " << m["count"].get<int64_t>() << "  "
           << (name.empty() ? compactFrame(m["forward"].get<std::string>()) : name)
           << (m.value("source", std::string()) == "constructor" ? " (built in its constructor)" : "");
        std::string cats;
        for (auto& [k, v] : m["by_category"].items())
            cats += (cats.empty() ? "" : ", ") + k + " " + formatBytes(v.get<int64_t>());
        os << "  (" << cats << ")";
        if (const auto& f = m["forward_moments"]; f.is_object())
            os << "  forward: before " << formatBytes(f["before_bytes"].get<int64_t>()) << ", peak "
               << formatBytes(f["peak_bytes"].get<int64_t>()) << ", after " << formatBytes(f["after_bytes"].get<int64_t>());
        os << "\n";
    }
}

void printUserCategories(std::ostream& os, const nlohmann::json& g, const std::string& source)
{
    const nlohmann::json& u = g["by_user_category"];
    os << "\n  alive at the peak by your categories (" << source << ", first matching rule wins):\n";
    for (const auto& r : u["rules"]) {
        os << "    " << formatBytes(r["bytes"].get<int64_t>()) << " in " << r["count"].get<int64_t>() << "  "
           << r["name"].get<std::string>();
        std::string cats;
        for (auto& [k, v] : r["by_category"].items())
            cats += (cats.empty() ? "" : ", ") + k + " " + formatBytes(v.get<int64_t>());
        os << (cats.empty() ? std::string() : "  (" + cats + ")") << "\n";
    }
    os << "    " << formatBytes(u["unclaimed_bytes"].get<int64_t>()) << " in " << u["unclaimed_count"].get<int64_t>()
       << "  (no rule)\n";
}

/// The categories with bytes, by their JSON names.
nlohmann::json categoryBytesJson(const std::array<int64_t, kTensorCategoryCount>& byCategory)
{
    nlohmann::json cats = nlohmann::json::object();
    for (size_t c = 0; c < kTensorCategoryCount; ++c)
        if (byCategory[c] > 0)
            cats[std::string(categoryLowerName(TensorCategory(c)))] = byCategory[c];
    return cats;
}

} // namespace

std::string liveGroupRowsText(const nlohmann::json& g)
{
    std::ostringstream os;
    for (const auto& row : g["by_stack"]) {
        LiveGroup lg;
        lg.count = row["count"].get<int64_t>();
        lg.size = row["size"].get<int64_t>();
        os << "    " << groupCountText(lg) << " = " << formatBytes(row["bytes"].get<int64_t>()) << "  "
           << categoryProseName(categoryFromName(row["category"].get<std::string>()).value_or(TensorCategory::Unknown))
           << ", born in " << row["phase"].get<std::string>() << "\n";
        const std::string user = row["user_code"].get<std::string>();
        if (user.empty())
            os << "        (no frames)\n";
        else
            os << "        by " << compactFrame(user) << "\n";
        for (const auto& f : row["frames"])
            if (f.get<std::string>() != user)
                os << "            " << compactFrame(f.get<std::string>()) << "\n";
    }
    return os.str();
}

nlohmann::json forwardMomentsJson(const ModuleForwardWindow* w)
{
    if (!w)
        return nullptr;
    return {{"first_event", w->firstEvent}, {"last_event", w->lastEvent}, {"peak_event", w->peakEvent},
            {"before_bytes", w->beforeBytes}, {"peak_bytes", w->peakBytes}, {"after_bytes", w->afterBytes}};
}

nlohmann::json liveGroupsJson(const LiveGroups& g, const ModuleForwardWindows& windows)
{
    nlohmann::json stacks = nlohmann::json::array();
    for (const LiveGroup& row : g.byStack)
        stacks.push_back({{"frames", row.frames},
                          {"user_code", row.userCode},
                          {"category", categoryLowerName(row.category)},
                          {"phase", phaseKey(row.phase)},
                          {"count", row.count},
                          {"bytes", row.bytes},
                          {"size", row.size}});
    nlohmann::json modules = nlohmann::json::array();
    for (const ModuleGroup& m : g.byModule) {
        modules.push_back({{"name", m.name},
                           {"forward", m.forward},
                           {"source", m.source},
                           {"count", m.count},
                           {"bytes", m.bytes},
                           {"by_category", categoryBytesJson(m.byCategory)},
                           {"forward_moments", forwardMomentsJson(windows.find(m.key))}});
    }
    nlohmann::json out = {{"event_index", g.event},
                          {"bytes", g.bytes},
                          {"count", g.count},
                          {"by_category", categoryMap(g.breakdown)},
                          {"by_phase", phaseMap(g.breakdown)},
                          {"by_stack", std::move(stacks)},
                          {"stack_groups", g.stackGroups},
                          {"by_module", std::move(modules)},
                          {"module_bytes", g.moduleBytes},
                          {"recorded_module_bytes", g.recordedModuleBytes},
                          {"metadata_module_bytes", g.metadataModuleBytes},
                          {"forward_iteration", windows.iteration}};
    if (!g.byUserCategory.empty())
        out["by_user_category"] = userCategoriesJson(g);
    return out;
}

nlohmann::json userCategoriesJson(const LiveGroups& g)
{
    nlohmann::json rows = nlohmann::json::array();
    for (const UserCategoryGroup& u : g.byUserCategory) {
        rows.push_back({{"name", u.name}, {"color", u.color}, {"count", u.count}, {"bytes", u.bytes},
                        {"by_category", categoryBytesJson(u.byCategory)}});
    }
    return {{"rules", std::move(rows)}, {"unclaimed_bytes", g.unclaimedBytes}, {"unclaimed_count", g.unclaimedCount}};
}

static nlohmann::json preRecordingJson(const PreRecording& r)
{
    const bool copies = r.found() && !r.readings.empty();
    if (!copies && r.factoredBlocks == 0)
        return nullptr;
    nlohmann::json readings = nlohmann::json::array();
    for (const PreRecordingReading& x : r.readings)
        readings.push_back({{"optimizer_state_copies", x.states},
                            {"gradient_copies", x.gradients},
                            {"extra_weight_copies", x.extraWeights}});
    return {{"bytes", r.bytes},
            {"weight_bytes", r.weightBytes},
            {"copies", r.copies},
            {"reference", r.reference},
            {"optimizer", r.optimizer.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.optimizer)},
            {"decided", copies ? r.decided() : true},
            {"readings", readings},
            {"optimizer_state_low_bytes", r.stateBytesLow()},
            {"optimizer_state_high_bytes", r.stateBytesHigh()},
            {"factored_state_bytes", r.factoredBytes},
            {"factored_state_blocks", r.factoredBlocks}};
}

nlohmann::json analysisJson(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top,
                            const UserCategories* categories)
{
    const Snapshot& snap = trace.snapshot;
    nlohmann::json devices = nlohmann::json::array();
    for (size_t d = 0; d < snap.devices.size(); ++d) {
        const MemoryTimeline& tl = trace.timelines[d];
        DeviceReportOptions options;
        options.capacity = capacity;
        const DeviceReport report = DeviceReport::compute(trace, d, options);
        const DeviceAnalysis& a = report.analysis;
        const CapacityEstimate& cap = report.capacity;
        nlohmann::json j;
        j["device"] = snap.devices[d].device;
        j["iterations"] = a.phases.iterations.size();
        j["iteration_source"] = a.phases.iterationSource;
        nlohmann::json phases = nlohmann::json::array();
        for (const PhaseSpan& s : a.phases.spans)
            phases.push_back({{"phase", phaseKey(s.phase)}, {"start_event", s.startEvent}, {"end_event", s.endEvent}});
        j["phases"] = phases;
        j["peak"] = {{"bytes", tl.peakAllocated},
                     {"event_index", tl.peakEventIndex},
                     {"by_category", categoryMap(a.atPeak)},
                     {"by_phase", phaseMap(a.atPeak)}};
        j["live_at_end_by_category"] = categoryMap(a.atEnd);
        nlohmann::json topRows = nlohmann::json::array();
        for (size_t i : a.topAtPeak) {
            const Allocation& al = tl.allocations[i];
            const AllocationClass& c = a.classes[i];
            topRows.push_back({{"size", al.size},
                               {"category", categoryLowerName(c.category)},
                               {"phase", phaseKey(c.birthPhase)},
                               {"rule", categoryRuleText(c.rule)},
                               {"start_event", al.start},
                               {"end_event", al.end},
                               {"frames", snap.frames.topFrameLines(al.stack, 3)}});
        }
        j["top_at_peak"] = topRows;
        j["groups_at_peak"] = liveGroupsJson(LiveGroups::at(trace, d, a, tl.peakEventIndex, top, 3, categories),
                                             moduleForwardWindows(trace, d, a, tl.peakEventIndex));
        nlohmann::json iters = nlohmann::json::array();
        for (const IterationPeak& p : a.iterationPeaks)
            iters.push_back({{"iteration", p.iteration},
                             {"start_event", p.startEvent},
                             {"end_event", p.endEvent},
                             {"peak_bytes", p.peakBytes},
                             {"peak_event", p.peakEvent},
                             {"end_bytes", p.endBytes}});
        j["iteration_peaks"] = iters;
        const Fragmentation& fr = a.fragmentation;
        j["fragmentation"] = {{"reserved_bytes", fr.reserved},
                              {"allocated_bytes", fr.allocated},
                              {"internal_bytes", fr.internalBytes},
                              {"inactive_bytes", fr.inactiveBytes},
                              {"pending_free_bytes", fr.pendingFreeBytes},
                              {"largest_free_block", fr.largestFreeBlock},
                              {"inactive_blocks", fr.inactiveBlocks}};
        // The state the fragmentation finding judges (the OOM, else the peak); `fragmentation`
        // above is the end of the trace.
        const FragmentationJudgement fj = judgeFragmentation(trace, d, a);
        j["fragmentation_judged"] = {{"moment", fj.moment},
                                     {"event_index", fj.eventIndex},
                                     {"reserved_bytes", fj.reserved},
                                     {"allocated_bytes", fj.allocated},
                                     {"inactive_bytes", fj.inactiveBytes},
                                     {"inactive_blocks", fj.inactiveBlocks},
                                     {"largest_free_block", fj.largestFreeBlock},
                                     {"internal_bytes", fj.internalBytes},
                                     {"unallocated_share", fj.unallocatedShare},
                                     {"request_bytes", fj.request},
                                     {"unusable_for_request_bytes", fj.unusableForRequest},
                                     {"expandable_segments", settingStateName(fj.expandable)}};
        j["capacity"] = {{"bytes", cap.bytes}, {"source", cap.source}};
        j["private_pools"] = privatePoolsJson(trace.snapshot.devices[d], tl);
        nlohmann::json findings = nlohmann::json::array();
        for (const Finding& f : report.findings)
            findings.push_back(
                {{"kind", f.kind}, {"verdict", f.verdict}, {"evidence", f.evidence}, {"first_move", f.firstMove}});
        j["findings"] = findings;
        // The rung the capacity finding's first move quotes, for scripts.
        nlohmann::json firstFit = nullptr;
        if (report.ladder && report.ladder->firstFit >= 0) {
            const Rung& r = report.ladder->rungs[size_t(report.ladder->firstFit)];
            firstFit = {{"rung", report.ladder->firstFit + 1},
                        {"title", r.title},
                        {"levers", r.levers},
                        {"projected_peak_bytes", int64_t(r.projection.peak)},
                        {"projected_peak_high_bytes", int64_t(r.projection.peakHigh)}};
        }
        j["ladder_first_fit"] = firstFit;
        j["fit"] = report.fit ? fitJudgementJson(*report.fit) : nlohmann::json(nullptr);
        j["before_recording"] = preRecordingJson(report.analysis.preRecording);
        nlohmann::json replay = nullptr;
        if (report.allocator) {
            const AllocatorVerdict& v = *report.allocator;
            replay = {{"recorded_segment_match", v.recordedMatch},
                      {"trusted", v.trusted},
                      {"tried", v.tried},
                      {"avoided_by", v.avoidedBy.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.avoidedBy)},
                      {"reserved_peak_bytes", v.reservedPeak},
                      {"capacity_bytes", v.capacity}};
        }
        j["allocator_replay"] = replay;
        j["failing_requests"] = oomRecordsJson(snap, snap.devices[d]);
        devices.push_back(std::move(j));
    }
    return {{"file", snap.path}, {"devices", devices}};
}

std::string peakWhere(int64_t event, bool history)
{
    if (event >= 0)
        return "at event " + std::to_string(event);
    return history ? "before the first event" : "in the final state";
}

std::string analysisText(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top, bool byModule,
                         const UserCategories* categories)
{
    const nlohmann::json j = analysisJson(trace, capacity, top, categories);
    std::ostringstream os;
    os << trace.snapshot.path << "\n";
    size_t index = 0;
    for (const auto& d : j["devices"]) {
        const bool history = trace.snapshot.devices[index++].trace.count() > 0;
        os << "\nDevice " << d["device"].get<int>() << ": ";
        if (history)
            os << d["iterations"].get<size_t>() << " iteration(s) (" << d["iteration_source"].get<std::string>()
               << "), " << d["phases"].size() << " phase spans\n";
        else
            os << "no allocation history (the file holds the final state only)\n";
        os << "  peak " << formatBytes(d["peak"]["bytes"].get<int64_t>()) << " "
           << peakWhere(d["peak"]["event_index"].get<int64_t>(), history) << "\n";
        printFailingRequests(os, d["failing_requests"]);
        os << "    by category:";
        for (auto& [k, v] : d["peak"]["by_category"].items())
            if (v.get<int64_t>() > 0)
                os << "  " << k << " " << formatBytes(v.get<int64_t>());
        os << "\n    by phase:   ";
        for (auto& [k, v] : d["peak"]["by_phase"].items())
            if (v.get<int64_t>() > 0)
                os << "  " << k << " " << formatBytes(v.get<int64_t>());
        printGroups(os, d["groups_at_peak"]);
        if (byModule)
            printModules(os, d["groups_at_peak"]);
        if (categories)
            printUserCategories(os, d["groups_at_peak"], categories->source());
        const auto& fj = d["fragmentation_judged"];
        const std::string moment = fj["moment"].get<std::string>();
        const int64_t judgedEvent = fj["event_index"].get<int64_t>();
        os << "  fragmentation "
           << (moment == "oom"    ? "at the OOM"
               : moment == "peak" ? "at the peak"
                                  : "in the final state (no allocation history)")
           << (moment == "end"   ? std::string()
               : judgedEvent < 0 ? std::string(" (before the first event)")
                                 : " (after event " + std::to_string(judgedEvent) + ")")
           << ": reserved " << formatBytes(fj["reserved_bytes"].get<int64_t>()) << ", allocated "
           << formatBytes(fj["allocated_bytes"].get<int64_t>()) << ", cached free "
           << formatBytes(fj["inactive_bytes"].get<int64_t>()) << " (largest block "
           << formatBytes(fj["largest_free_block"].get<int64_t>()) << "); expandable_segments "
           << fj["expandable_segments"].get<std::string>() << "\n";
        const auto& fr = d["fragmentation"];
        os << "  allocator at the end of the trace: reserved " << formatBytes(fr["reserved_bytes"].get<int64_t>())
           << ", allocated " << formatBytes(fr["allocated_bytes"].get<int64_t>()) << ", cached free "
           << formatBytes(fr["inactive_bytes"].get<int64_t>()) << " (largest block "
           << formatBytes(fr["largest_free_block"].get<int64_t>()) << "), rounding "
           << formatBytes(fr["internal_bytes"].get<int64_t>()) << "\n";
        os << "  findings:\n";
        for (const auto& f : d["findings"]) {
            os << "  - [" << f["kind"].get<std::string>() << "] " << f["verdict"].get<std::string>() << "\n";
            os << "      evidence:   " << f["evidence"].get<std::string>() << "\n";
            os << "      first move: " << f["first_move"].get<std::string>() << "\n";
        }
    }
    return os.str();
}

std::string analysisMarkdown(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top)
{
    const size_t count = trace.snapshot.devices.size();
    const int primary = primaryDeviceIndex(trace);
    // One postmortem, the device it is about first (the OOM's, else the highest peak's), the
    // others as sections of it: three documents with three titles read as three incidents.
    std::vector<size_t> order;
    if (primary >= 0)
        order.push_back(size_t(primary));
    for (size_t d = 0; d < count; ++d)
        if (int(d) != primary)
            order.push_back(d);
    const std::string& path = trace.snapshot.path;
    std::string md;
    if (count > 1)
        md = "# Memory postmortem: " + path.substr(path.find_last_of('/') + 1) + "\n\n" + std::to_string(count) +
             " devices; device " + std::to_string(trace.snapshot.devices[order.front()].device) +
             (trace.snapshot.devices[order.front()].ooms.empty() ? " had the highest peak" : " ran out of memory") +
             " and comes first.\n\n";
    for (size_t d : order) {
        DeviceReportOptions options;
        options.capacity = capacity;
        const DeviceReport report = DeviceReport::compute(trace, d, options);
        PostmortemOptions po;
        po.topGroups = top;
        if (count > 1) {
            const DeviceData& dev = trace.snapshot.devices[d];
            po.headingLevel = 2;
            po.title = "Device " + std::to_string(dev.device) +
                       (!dev.ooms.empty() ? " (out of memory)" : int(d) == primary ? " (highest peak)" : "");
            md += '\n';
        }
        md += postmortemMarkdown({trace, d, report.analysis, report.capacity, report.findings}, po);
    }
    return md;
}

} // namespace headroom
