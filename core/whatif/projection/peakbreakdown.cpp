// SPDX-License-Identifier: MIT
#include "core/whatif/projection/peakbreakdown.h"

#include "core/whatif/replay/traceprojector.h"

#include <array>

namespace headroom {

namespace {

/// The breakdown's name for the copies the autocast replay adds (no category in the trace).
constexpr std::string_view kAutocastCopies = "autocast_copies";

using Live = std::array<double, kTensorCategoryCount + 1>; ///< the last: autocast's copies

/// Live bytes by category right after every boundary of `event` (-1: before the first event).
Live liveAt(const TraceProjector& tp, const ReplayTarget& t, int64_t event, const std::vector<TensorCategory>& cats)
{
    Live live{}, at{};
    bool taken = false;
    tp.visit(t, [&](int64_t e, uint32_t alloc, bool end, double bytes) {
        if (taken)
            return;
        if (e > event) { // every boundary of the peak event is counted
            at = live;
            taken = true;
            return;
        }
        const size_t slot = alloc < cats.size() ? size_t(cats[alloc]) : size_t(kTensorCategoryCount);
        live[slot] += end ? -bytes : bytes;
    });
    return taken ? at : live;
}

/// The terms' parts of the peak phase that are not the trace's tensors (fragmentation, the
/// CUDA context, the target GPU's workspaces), scaled to what the headline puts over its tensors.
void addOverhead(std::vector<Component>& out, const Projection& p)
{
    const double over = p.peak - p.peakAllocated;
    std::vector<Component> parts;
    double termsOver = 0;
    for (const Component& c : p.peakProjection().components)
        if (c.name == "fragmentation" || c.name == "outside_allocator" || c.name == "cublas_workspaces") {
            parts.push_back({c.name, c.bytes, 0, Provenance::Modelled});
            termsOver += c.bytes;
        }
    if (over <= 0 || termsOver <= 0)
        return;
    for (Component& c : parts) {
        c.bytes *= over / termsOver;
        out.push_back(c);
    }
}

} // namespace

std::string_view breakdownName(TensorCategory c)
{
    switch (c) {
    case TensorCategory::Parameter: return "parameters";
    case TensorCategory::OptimizerState: return "optimizer_state";
    case TensorCategory::Input: return "inputs";
    case TensorCategory::Temporary: return "temporaries";
    case TensorCategory::Activation: return "activations";
    case TensorCategory::Gradient: return "gradients";
    case TensorCategory::AutogradDetail: return "autograd_detail";
    case TensorCategory::KvCache: return "kv_cache";
    case TensorCategory::EngineWeights: return "engine_weights";
    case TensorCategory::Unknown: break;
    }
    return "unknown";
}

/// A step the OOM cut short: what the recording never reached, so the parts add up to the
/// whole step's headline.
static void addRestOfCutStep(Projection& p)
{
    if (!p.wholeStepFromCut)
        return;
    double sum = 0;
    for (const Component& c : p.atPeak)
        sum += c.bytes;
    if (p.peak - sum > 0.5)
        p.atPeak.push_back({"rest_of_cut_step", p.peak - sum, 0, Provenance::Modelled});
}

void describePeak(Projection& p, const WhatIfBaseline& base)
{
    p.atPeak.clear();
    p.atPeakEvent = -1;
    if (!p.replayed || !base.trace || !base.categories) {
        for (const Component& c : p.peakProjection().components)
            p.atPeak.push_back(c);
        addRestOfCutStep(p);
        return;
    }
    const Live live = liveAt(*base.trace, p.replayTarget, p.replayPeakEvent, *base.categories);
    for (size_t i = 0; i < live.size(); ++i) {
        if (live[i] < 0.5)
            continue;
        const std::string name(i < kTensorCategoryCount ? breakdownName(TensorCategory(i)) : kAutocastCopies);
        p.atPeak.push_back({name, live[i], 0, Provenance::Scaled});
    }
    if (p.replayTarget.standing > 0)
        p.atPeak.push_back({"gathered_params", p.replayTarget.standing, 0, Provenance::Modelled});
    addOverhead(p.atPeak, p);
    addRestOfCutStep(p);
    p.atPeakEvent = p.replayPeakEvent;
}

} // namespace headroom
