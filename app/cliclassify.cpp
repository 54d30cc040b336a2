// SPDX-License-Identifier: MIT
#include "app/cliclassify.h"

#include "app/clijson.h"
#include "app/cliload.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/moduleof.h"
#include "core/util/units.h"

#include <iostream>

namespace headroom::cli {

namespace {

nlohmann::json allocationRow(const FrameTable& ft, const TraceEvents& ev, const Allocation& a, const AllocationClass& c,
                             ModuleResolver& moduleOfAllocation)
{
    const ModuleOf m = moduleOfAllocation(a.start, a.stack);
    nlohmann::json time = nullptr;
    if (a.start >= 0 && static_cast<size_t>(a.start) < ev.timeUs.size() && ev.timeUs[a.start] != TraceEvents::kNoTime)
        time = ev.timeUs[a.start];
    return {{"alloc_time_us", time},
            {"addr", a.addr},
            {"bytes", a.size},
            {"start_event", a.start},
            {"end_event", a.end},
            {"category", categoryLowerName(c.category)},
            {"phase", phaseKey(c.birthPhase)},
            {"rule", categoryRuleText(c.rule)},
            {"module", m.named ? nlohmann::json(std::string(m.name)) : nlohmann::json()},
            {"module_forward", m.forwardFrame != UINT32_MAX ? nlohmann::json(ft.formatFrame(m.forwardFrame)) : nlohmann::json()}};
}

nlohmann::json deviceJson(const LoadedTrace& trace, size_t index, const DeviceAnalysis& da)
{
    const MemoryTimeline& tl = trace.timelines[index];
    const TraceEvents& ev = trace.snapshot.devices[index].trace;
    nlohmann::json rows = nlohmann::json::array();
    ModuleResolver moduleOfAllocation(trace.snapshot.frames, ev);
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        rows.push_back(allocationRow(trace.snapshot.frames, ev, tl.allocations[i], da.classes[i], moduleOfAllocation));
    return {{"device", tl.device}, {"peak_event", tl.peakEventIndex}, {"allocations", std::move(rows)}};
}

void printText(const LoadedTrace& trace, size_t index, const DeviceAnalysis& da)
{
    const MemoryTimeline& tl = trace.timelines[index];
    std::cout << "device " << tl.device << ": " << tl.allocations.size() << " allocations; alive at the peak (event "
              << tl.peakEventIndex << "):\n";
    for (int c = 0; c < kTensorCategoryCount; ++c)
        if (da.atPeak.byCategory[c] > 0)
            std::cout << "  " << categoryLowerName(static_cast<TensorCategory>(c)) << " "
                      << formatBytes(da.atPeak.byCategory[c]) << "\n";
    for (size_t p = 0; p < kPhaseCount; ++p)
        if (da.atPeak.byPhase[p] > 0)
            std::cout << "  born in " << phaseKey(static_cast<Phase>(p)) << " " << formatBytes(da.atPeak.byPhase[p])
                      << "\n";
}

} // namespace

void ClassifyCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("classify", "Every allocation with the category and phase Headroom gives it");
    m_cmd->add_option("FILE", m_file, "Snapshot or trace file")->required();
    m_cmd->add_flag("--json", m_json, "Machine-readable JSON output: one row per allocation");
}

int ClassifyCommand::run()
{
    const std::shared_ptr<const LoadedTrace> trace = loadOrReport(m_file);
    if (!trace)
        return 2;
    nlohmann::json devices = nlohmann::json::array();
    for (size_t i = 0; i < trace->timelines.size(); ++i) {
        const DeviceAnalysis da = analyzeDevice(*trace, i);
        if (m_json)
            devices.push_back(deviceJson(*trace, i, da));
        else
            printText(*trace, i, da);
    }
    if (m_json)
        printJson({{"file", trace->snapshot.path}, {"devices", std::move(devices)}});
    return 0;
}

} // namespace headroom::cli
