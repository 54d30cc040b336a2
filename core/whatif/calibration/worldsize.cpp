// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/worldsize.h"

#include "core/analysis/frameworksites.h"
#include "core/replay/allocatorconstants.h"
#include "core/util/units.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace headroom {

namespace {

/// Within 2% of a whole number, for the flat buffers: Megatron pads its buffer per bucket and
/// keeps main parameters per parameter, so the share is not exact.
constexpr double kWholeTolerance = 0.02;

/// The events of the first forward pass the window holds whole: from the end of the step before
/// it (the root module's gather may precede its forward's first event) to the next backward.
/// A window that opens in a forward with memory alive before it (a ring buffer that wrapped, a
/// recording started mid-step) holds that forward in part: the next iteration's is taken.
std::optional<std::pair<int64_t, int64_t>> wholeForward(const PhaseAnalysis& ph, const MemoryTimeline& tl)
{
    if (ph.spans.empty())
        return std::nullopt;
    const bool openedInForward = ph.spans.front().phase == Phase::Forward && tl.initialAllocationCount > 0;
    const int firstIteration = ph.iterationOf(ph.spans.front().startEvent);
    int64_t stepEnd = -1; // the last event of the latest backward or optimizer span
    for (size_t k = 0; k < ph.spans.size(); ++k) {
        const PhaseSpan& s = ph.spans[k];
        if (s.phase == Phase::Backward || s.phase == Phase::Optimizer)
            stepEnd = s.endEvent;
        if (s.phase != Phase::Forward || (openedInForward && ph.iterationOf(s.startEvent) == firstIteration))
            continue;
        int64_t end = ph.spans.back().endEvent;
        for (size_t j = k + 1; j < ph.spans.size(); ++j)
            if (ph.spans[j].phase == Phase::Backward) {
                end = ph.spans[j].startEvent - 1;
                break;
            }
        return std::pair(stepEnd + 1, end);
    }
    return std::nullopt;
}

/// The all-gathers' outputs and inputs in one forward, and the sharded parameters.
struct GatherBytes {
    double outputs = 0, inputs = 0, shards = 0;
    int64_t outputBlocks = 0, inputBlocks = 0, shardBlocks = 0;
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
        if (sites.of(al.stack) == FrameworkSite::FsdpFlatParameter && a.classes[i].category == TensorCategory::Parameter) {
            g.shards += double(al.size);
            ++g.shardBlocks;
        }
        if (!pass || al.start < pass->first || al.start > pass->second)
            continue;
        if (part == FrameworkSites::GatherPart::Output) {
            g.outputs += double(al.size);
            ++g.outputBlocks;
        } else if (part == FrameworkSites::GatherPart::Input) {
            g.inputs += double(al.size);
            ++g.inputBlocks;
        }
    }
    return g;
}

/// FSDP: the all-gathers' outputs over their inputs in one whole forward.
std::optional<WorldSizeReading> fromGathers(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a)
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
    // Exact before the allocator rounds each block up to kMinBlock: off by less than that per block.
    const double slack = double(allocator::kMinBlock) * double(g.outputBlocks + int64_t(whole) * (copies ? g.inputBlocks : g.shardBlocks));
    const std::string weighed = "FSDP's all-gathers in one forward (" + formatBytes(int64_t(g.outputs)) + ") over " +
                                (copies ? "the copies made for them in the gather's dtype ("
                                        : "the sharded parameters they gather (") +
                                formatBytes(int64_t(in)) + ")";
    if (whole < 1 || std::abs(g.outputs - whole * in) > slack) {
        char text[96];
        std::snprintf(text, sizeof text, ": x%.3f, no whole multiple within the allocator's rounding", ratio);
        r.item.detail = weighed + text;
        return r;
    }
    r.devices = int(whole);
    r.item = {"devices", std::to_string(r.devices), "read",
              weighed + ": each output is the world size times its input"};
    return r;
}

/// DeepSpeed ZeRO-1/2's constructor and Megatron's DistributedOptimizer: the flat parameters
/// (kept, whole on every rank) against the fp32 master partition (kept, this rank's share).
std::optional<WorldSizeReading> fromMasterPartition(const LoadedTrace& trace, size_t deviceIndex,
                                                    const DeviceAnalysis& a, const std::vector<Precision>& precisions)
{
    const MemoryTimeline& tl = trace.timelines.at(deviceIndex);
    FrameworkSites sites(trace.snapshot.frames);
    double flat = 0, master = 0;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const FrameworkSite s = sites.of(tl.allocations[i].stack);
        const bool partitioned = s == FrameworkSite::DeepSpeedZeroInit || s == FrameworkSite::MegatronMainParams ||
                                 s == FrameworkSite::MegatronParamAndGradBuffer;
        if (partitioned && a.classes[i].rule == CategoryRule::FlatParameterBuffer)
            flat += double(tl.allocations[i].size);
        else if (partitioned && a.classes[i].rule == CategoryRule::MasterWeights)
            master += double(tl.allocations[i].size);
    }
    if (flat <= 0 || master <= 0)
        return std::nullopt;
    const std::string weighed = "the framework's flat parameters (" + formatBytes(int64_t(flat)) +
                                ") over its fp32 master partition (" + formatBytes(int64_t(master)) + ")";
    std::set<int> readings;
    std::string each;
    for (const double width : {2.0, 4.0}) {
        const bool open = std::any_of(precisions.begin(), precisions.end(),
                                      [&](Precision p) { return stateBytes(p, OptimizerKind::AdamW).weights == width; });
        const double ratio = flat * 4 / (width * master);
        const double whole = std::round(ratio);
        if (!open || whole < 1 || std::abs(ratio - whole) > kWholeTolerance * whole)
            continue;
        readings.insert(int(whole));
        each += std::string(each.empty() ? "" : ", ") + std::to_string(int(whole)) +
                (width == 2 ? " with 16-bit parameters" : " with fp32 parameters");
    }
    WorldSizeReading r;
    if (readings.size() == 1) {
        r.devices = *readings.begin();
        r.item = {"devices", std::to_string(r.devices), "read",
                  weighed + ": the partition is the parameters' share at 4 bytes an element; " + each +
                      ", the only whole reading at the precisions left open"};
    } else {
        r.item = {"devices", "", "unknown",
                  weighed + (readings.empty() ? ": no whole number at the precisions left open"
                                              : ": " + each + "; the measured precision settles it")};
    }
    return r;
}

} // namespace

std::optional<WorldSizeReading> readWorldSize(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                                              const std::vector<Precision>& precisions)
{
    if (auto r = fromGathers(trace, deviceIndex, a))
        return r;
    return fromMasterPartition(trace, deviceIndex, a, precisions);
}

} // namespace headroom
