// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/fsdpworldsize.h"

#include "core/analysis/frameworksites.h"
#include "core/util/units.h"

#include <cmath>
#include <utility>

namespace headroom {

namespace {

/// Within 2% of a whole number: the allocator rounds each block to 512 bytes, and a shard of
/// a few elements rounds up by more than the output made of it.
constexpr double kWholeTolerance = 0.02;

/// The events of the first forward pass the window holds whole: from a forward span's start to
/// the next backward's. A window that opens in a forward with memory alive before it (a ring
/// buffer that wrapped, a recording started mid-step) holds that forward in part: the next
/// iteration's is taken.
std::optional<std::pair<int64_t, int64_t>> wholeForward(const PhaseAnalysis& ph, const MemoryTimeline& tl)
{
    if (ph.spans.empty())
        return std::nullopt;
    const bool openedInForward = ph.spans.front().phase == Phase::Forward && tl.initialAllocationCount > 0;
    const int firstIteration = ph.iterationOf(ph.spans.front().startEvent);
    for (size_t k = 0; k < ph.spans.size(); ++k) {
        const PhaseSpan& s = ph.spans[k];
        if (s.phase != Phase::Forward || (openedInForward && ph.iterationOf(s.startEvent) == firstIteration))
            continue;
        int64_t end = ph.spans.back().endEvent;
        for (size_t j = k + 1; j < ph.spans.size(); ++j)
            if (ph.spans[j].phase == Phase::Backward) {
                end = ph.spans[j].startEvent - 1;
                break;
            }
        return std::pair(s.startEvent, end);
    }
    return std::nullopt;
}

/// The all-gathers' outputs and inputs in one forward, and the sharded parameters.
struct GatherBytes {
    double outputs = 0, inputs = 0, shards = 0;
    bool any = false; ///< the trace has an FSDP all-gather output anywhere
};

GatherBytes gatherBytes(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                        std::optional<std::pair<int64_t, int64_t>> pass)
{
    GatherBytes g;
    const MemoryTimeline& tl = trace.timelines.at(deviceIndex);
    FrameworkSites sites(trace.snapshot.frames);
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& al = tl.allocations[i];
        const auto part = sites.fsdpGatherPart(al.stack);
        g.any = g.any || part == FrameworkSites::GatherPart::Output;
        if (sites.of(al.stack) == FrameworkSite::FsdpFlatParameter && a.classes[i].category == TensorCategory::Parameter)
            g.shards += double(al.size);
        if (!pass || al.start < pass->first || al.start > pass->second)
            continue;
        if (part == FrameworkSites::GatherPart::Output)
            g.outputs += double(al.size);
        else if (part == FrameworkSites::GatherPart::Input)
            g.inputs += double(al.size);
    }
    return g;
}

} // namespace

std::optional<WorldSizeReading> readFsdpWorldSize(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a)
{
    const auto pass = wholeForward(a.phases, trace.timelines.at(deviceIndex));
    const GatherBytes g = gatherBytes(trace, deviceIndex, a, pass);
    if (!g.any)
        return std::nullopt;
    WorldSizeReading r;
    r.item = {"devices", "", "unknown", ""};
    // Mixed precision gathers a copy made in the gather's dtype; without it, the shard itself.
    const bool copies = g.inputs > 0;
    const double in = copies ? g.inputs : g.shards;
    if (!pass || g.outputs <= 0 || in <= 0) {
        r.item.detail = "FSDP's all-gathers in the stacks, but no forward whole in the window to weigh them in";
        return r;
    }
    const double ratio = g.outputs / in;
    const double whole = std::round(ratio);
    const std::string weighed = "FSDP's all-gathers in one forward (" + formatBytes(int64_t(g.outputs)) + ") over " +
                                (copies ? "the copies made for them in the gather's dtype ("
                                        : "the sharded parameters they gather (") +
                                formatBytes(int64_t(in)) + ")";
    if (whole < 1 || std::abs(ratio - whole) > kWholeTolerance * whole) {
        char text[64];
        std::snprintf(text, sizeof text, ": x%.2f, no whole number", ratio);
        r.item.detail = weighed + text;
        return r;
    }
    r.devices = int(whole);
    r.item = {"devices", std::to_string(r.devices), "read",
              weighed + ": each output is the world size times its input"};
    return r;
}

} // namespace headroom
