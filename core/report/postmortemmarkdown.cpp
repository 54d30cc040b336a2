// SPDX-License-Identifier: MIT
#include "core/report/postmortemmarkdown.h"

#include "core/analysis/summary.h"
#include "core/util/textlayout.h"
#include "core/util/units.h"

#include <array>
#include <cstdio>

namespace headroom {

namespace {

std::string percentOf(int64_t part, int64_t whole)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
    return buf;
}

std::string heading(int level, const std::string& text)
{
    return std::string(size_t(level), '#') + " " + text + "\n\n";
}

std::string summaryTable(const PostmortemParts& p)
{
    const DeviceData& dev = p.trace.snapshot.devices[p.deviceIndex];
    const MemoryTimeline& tl = p.trace.timelines[p.deviceIndex];
    std::string md = "| | |\n|---|---|\n";
    md += "| Device | " + std::to_string(dev.device) + " (" + dev.deviceType + ") |\n";
    md += "| Trace entries | " + std::to_string(dev.trace.count()) + " |\n";
    md += "| Allocations | " + std::to_string(tl.allocations.size()) + " |\n";
    md += "| Peak allocated | " + formatBytes(tl.peakAllocated) + " at event " + std::to_string(tl.peakEventIndex) +
          " |\n";
    md += "| Peak reserved | " +
          (tl.reservedRecorded ? formatBytes(tl.peakReserved) : std::string("not recorded (a CPU recording)")) + " |\n";
    md += "| Device capacity | " + (p.capacity.bytes > 0 ? formatBytes(p.capacity.bytes) : std::string("unknown")) +
          " |\n";
    md += "| OOMs | " + std::to_string(dev.ooms.size()) + " |\n";
    md += "| Iterations | " + std::to_string(p.analysis.phases.iterations.size()) + " (" +
          p.analysis.phases.iterationSource + ") |\n\n";
    return md;
}

std::string categoryTable(const Breakdown& peak)
{
    std::string md = "| Category | Bytes | Share |\n|---|---:|---:|\n";
    for (TensorCategory c : kCategoryDisplayOrder) {
        const int64_t b = peak.byCategory[size_t(c)];
        if (b > 0)
            md += "| " + categoryProseName(c) + " | " + formatBytes(b) + " | " + percentOf(b, peak.total) + " |\n";
    }
    md += "| **total** | **" + formatBytes(peak.total) + "** | |\n\n";
    return md;
}

std::string siteCell(const LiveGroup& row)
{
    if (row.userCode.empty())
        return "(no frames)";
    std::string cell = "`";
    cell += compactFrame(row.userCode);
    cell += '`';
    return cell;
}

std::string groupTable(const LiveGroups& g)
{
    std::string md = "Alive at the peak by the code that allocated it (" + std::to_string(g.byStack.size()) + " of " +
                     std::to_string(g.stackGroups) + " sites):\n\n";
    md += "| Allocations | Bytes | Category | Born in | Allocated by |\n|---|---:|---|---|---|\n";
    for (const LiveGroup& row : g.byStack)
        md += "| " + groupCountText(row) + " | " + formatBytes(row.bytes) + " | " + categoryProseName(row.category) +
              " | " + std::string(phaseKey(row.phase)) + " | " + siteCell(row) + " |\n";
    return md + "\n";
}

std::string imageLink(const PostmortemOptions& o, const char* alt, const char* file)
{
    return o.images ? "![" + std::string(alt) + "](" + file + ")\n\n" : std::string();
}

} // namespace

std::string findingTitle(const std::string& kind)
{
    if (kind == "capacity")
        return "Capacity";
    if (kind == "leak")
        return "Leak";
    if (kind == "fragmentation")
        return "Fragmentation";
    if (kind == "outlier_batch")
        return "Outlier batch";
    if (kind == "oom")
        return "Out of memory";
    if (kind == "imbalance")
        return "Imbalance across devices";
    if (kind == "categories")
        return "Categories that do not add up";
    return kind;
}

std::string categoryProseName(TensorCategory c)
{
    switch (c) {
    case TensorCategory::Parameter:
        return "parameters";
    case TensorCategory::OptimizerState:
        return "optimizer state";
    case TensorCategory::Input:
        return "inputs";
    case TensorCategory::Temporary:
        return "temporaries";
    case TensorCategory::Activation:
        return "activations";
    case TensorCategory::Gradient:
        return "gradients";
    case TensorCategory::AutogradDetail:
        return "autograd detail";
    case TensorCategory::KvCache:
        return "KV cache";
    case TensorCategory::EngineWeights:
        return "inference engine's weights";
    case TensorCategory::Unknown:
        break;
    }
    return "unknown";
}

std::string groupCountText(const LiveGroup& g)
{
    return std::to_string(g.count) + " x " + formatBytes(g.size);
}

std::string diagnosisMarkdown(const PostmortemParts& p, int findingLevel)
{
    const MemoryTimeline& tl = p.trace.timelines[p.deviceIndex];
    const DeviceData& dev = p.trace.snapshot.devices[p.deviceIndex];
    std::string md = "Peak **" + formatBytes(tl.peakAllocated) + "** at event " + std::to_string(tl.peakEventIndex) +
                     (tl.reservedRecorded ? " (reserved peak " + formatBytes(tl.peakReserved) + ")"
                                          : std::string(" (reserved not recorded: a CPU recording)")) +
                     ". Device capacity: " +
                     (p.capacity.bytes > 0 ? formatBytes(p.capacity.bytes) + " (" + p.capacity.source + ")"
                                           : std::string("unknown")) +
                     ".\n\n";
    if (p.findings.empty())
        md += "No problem found.\n\n";
    for (const Finding& f : p.findings)
        md += heading(findingLevel, findingTitle(f.kind)) + "**" + f.verdict + "**\n\n- Evidence: " + f.evidence +
              "\n- First move: " + f.firstMove + "\n\n";
    for (const OomEvent& o : dev.ooms) {
        md += "- OOM at event " + std::to_string(o.eventIndex) + ": requested " + formatBytes(o.size) + " with " +
              formatBytes(o.deviceFree) + " free\n";
        const std::vector<std::string> frames = p.trace.snapshot.frames.topFrameLines(dev.oomStack(o), kOomFrameLines);
        if (frames.empty())
            md += "  (the OOM record carries no frames)\n";
        for (const std::string& f : frames)
            md += "    - `" + f + "`\n";
    }
    return md;
}

std::string postmortemMarkdown(const PostmortemParts& p, const PostmortemOptions& o)
{
    const MemoryTimeline& tl = p.trace.timelines[p.deviceIndex];
    const int h = o.headingLevel;
    const std::string& path = p.trace.snapshot.path;
    std::string md =
        heading(h, o.title.empty() ? "Memory postmortem: " + path.substr(path.find_last_of('/') + 1) : o.title);
    if (!o.writtenBy.empty())
        md += o.writtenBy + "\n\n";
    md += heading(h + 1, "Summary") + summaryTable(p);
    md += o.images ? heading(h + 1, "Timeline") + imageLink(o, "Timeline", "timeline.png") : std::string();
    md += heading(h + 1, "At the peak") + imageLink(o, "Breakdown at the peak", "breakdown_at_peak.png");
    md += categoryTable(p.analysis.atPeak);
    md += groupTable(LiveGroups::at(p.trace, p.deviceIndex, p.analysis, tl.peakEventIndex, o.topGroups));
    md += imageLink(o, "Stacks at the peak", "stacks_at_peak.png");
    md += heading(h + 1, "Diagnosis") + diagnosisMarkdown(p, h + 2) + (o.images ? "\n" : "");
    md += imageLink(o, "Diagnosis", "diagnosis.png");
    return md;
}

} // namespace headroom
