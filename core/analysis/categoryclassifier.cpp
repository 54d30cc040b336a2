// SPDX-License-Identifier: MIT
#include "core/analysis/categoryclassifier.h"

#include "core/analysis/frameworksites.h"
#include "core/analysis/phaseclassifier.h"

#include <optional>
#include <unordered_set>

namespace headroom {

std::string_view categoryRuleText(CategoryRule r)
{
    switch (r) {
    case CategoryRule::ExactFromProfiler: return "exact category from the profiler";
    case CategoryRule::AliveThroughWindow: return "alive before the trace began and at its end";
    case CategoryRule::FreedByZeroGrad: return "alive before the trace, freed in the optimizer phase (zero_grad)";
    case CategoryRule::SavedBeforeWindow: return "alive before the trace, freed in backward";
    case CategoryRule::BeforeWindowOther: return "alive before the trace began; nothing else is known";
    case CategoryRule::ModuleSetupFrames: return "born under module construction or .to()/.cuda() frames";
    case CategoryRule::SetupBeforeForward: return "born before the first forward and never freed";
    case CategoryRule::SetupFreedLater: return "born in data/setup code and freed after the step began";
    case CategoryRule::SetupKeptAfterTraining: return "born outside any training phase after training began, never freed";
    case CategoryRule::SamePhaseTemporary: return "born and freed within the same phase";
    case CategoryRule::ForwardSavedForBackward: return "born in forward, freed in backward (saved for backward)";
    case CategoryRule::ForwardOutlivesPass: return "born in forward, outlives the forward pass";
    case CategoryRule::ForwardFreedBeforeBackward:
        return "born in forward, freed before the backward began (not saved for it: the logits a loss consumed)";
    case CategoryRule::BackwardOutlivesPass: return "born in backward, alive after backward ends (gradient)";
    case CategoryRule::BackwardHeldToEnd: return "born in backward, held for most of the backward pass";
    case CategoryRule::OptimizerFirstStepState:
        return "born in the optimizer step, kept after it, shaped like a parameter (state)";
    case CategoryRule::OptimizerKeptNotState:
        return "born in the optimizer step and kept, but shaped like no parameter: not evidence of state";
    case CategoryRule::UnknownPhase: return "born in an unclassified phase";
    case CategoryRule::BeforeWindowWeights:
        return "alive before the trace: one copy of the parameter set, the weights";
    case CategoryRule::BeforeWindowState:
        return "alive before the trace: a further copy of the parameter set, optimizer state";
    case CategoryRule::BeforeWindowGradient:
        return "alive before the trace: a further copy of the parameter set, gradients kept across steps";
    case CategoryRule::BeforeWindowUndecided:
        return "alive before the trace: a further copy of the parameter set, optimizer state or gradients "
               "(undecided)";
    case CategoryRule::FreedByOptimizerUpdate:
        return "alive before the trace, freed by the optimizer's update (not zero_grad): state it replaced";
    case CategoryRule::SetupBatchOfCutStep:
        return "born outside any training phase after the last optimizer step, alive at the OOM that cut the step "
               "short: that step's batch";
    case CategoryRule::DdpGradientBucket:
        return "allocated by DistributedDataParallel's Reducer and kept past its phase: a flat gradient bucket "
               "(the gradients a second time, for the all-reduce)";
    case CategoryRule::DdpConstructionTemporary:
        return "allocated in DistributedDataParallel's constructor outside its Reducer: the broadcast of the "
               "module's state or the shape check across ranks";
    case CategoryRule::BeforeWindowStateBySize:
        return "alive before the trace, of a size the weights do not take, and the optimizer step computes with "
               "blocks of that size: state of its own shape (a factored second moment)";
    }
    return "?";
}

namespace {

bool hasModuleSetupFrames(const FrameTable& ft, uint32_t stack)
{
    for (uint32_t f : ft.stack(stack)) {
        const Frame& fr = ft.frame(f);
        const std::string_view name = ft.strings().get(fr.name);
        const std::string_view file = ft.strings().get(fr.file);
        if ((name == "__init__" && !isWorkerStartFile(file)) || name == "reset_parameters" || name == "load_state_dict")
            return true;
        if (file.find("torch/nn/modules/module.py") != std::string_view::npos &&
            (name == "_apply" || name == "to" || name == "cuda"))
            return true;
    }
    return false;
}

/// For each phase span, the first event of the next backward span that starts after it
/// (INT64_MAX: none): a forward tensor freed before then was not saved for backward.
std::vector<int64_t> nextBackwardStarts(const PhaseAnalysis& ph)
{
    std::vector<int64_t> out(ph.spans.size(), INT64_MAX);
    int64_t next = INT64_MAX;
    for (size_t k = ph.spans.size(); k-- > 0;) {
        out[k] = next;
        if (ph.spans[k].phase == Phase::Backward)
            next = ph.spans[k].startEvent;
    }
    return out;
}

/// A framework's own allocation, by its site: DDP's buckets whatever phase rebuilt them.
std::optional<AllocationClass> frameworkClass(FrameworkSite site, Phase birth, bool diesInSpan)
{
    if (site == FrameworkSite::DdpReducer && !diesInSpan)
        return AllocationClass{TensorCategory::Gradient, CategoryRule::DdpGradientBucket, birth};
    if (site == FrameworkSite::DdpConstruction)
        return AllocationClass{TensorCategory::Temporary, CategoryRule::DdpConstructionTemporary, birth};
    return std::nullopt;
}

AllocationClass classifyOne(const FrameTable& ft, FrameworkSites& sites, const Allocation& a,
                            const PhaseAnalysis& ph, const std::vector<int64_t>& nextBackward)
{
    using C = TensorCategory;
    using R = CategoryRule;
    const bool alive = a.end == Allocation::kStillAlive;
    if (a.start == Allocation::kBeforeWindow) {
        if (alive)
            return {C::Parameter, R::AliveThroughWindow, Phase::Setup};
        const Phase death = ph.eventPhase[a.end];
        if (death == Phase::Optimizer)
            return {C::Gradient, R::FreedByZeroGrad, Phase::Setup};
        if (death == Phase::Backward)
            return {C::Activation, R::SavedBeforeWindow, Phase::Setup};
        return {C::Unknown, R::BeforeWindowOther, Phase::Setup};
    }
    const Phase birth = ph.eventPhase[a.start];
    const PhaseSpan* span = ph.spanOf(a.start);
    const bool diesInSpan = !alive && span && a.end <= span->endEvent;
    const Phase death = alive ? Phase::Other : ph.eventPhase[a.end];
    if (auto fw = frameworkClass(sites.of(a.stack), birth, diesInSpan))
        return *fw;
    switch (birth) {
    case Phase::Setup:
        if (hasModuleSetupFrames(ft, a.stack))
            return {C::Parameter, R::ModuleSetupFrames, birth};
        if (alive)
            return (ph.firstForwardEvent < 0 || a.start < ph.firstForwardEvent)
                       ? AllocationClass{C::Parameter, R::SetupBeforeForward, birth}
                       : AllocationClass{C::Unknown, R::SetupKeptAfterTraining, birth};
        if (diesInSpan)
            return {C::Temporary, R::SamePhaseTemporary, birth};
        return {C::Input, R::SetupFreedLater, birth};
    case Phase::Forward:
    case Phase::Loss:
        if (diesInSpan)
            return {C::Temporary, R::SamePhaseTemporary, birth};
        if (!alive && death == Phase::Backward)
            return {C::Activation, R::ForwardSavedForBackward, birth};
        // Freed before the backward that follows began (the logits a loss consumed, freed in the
        // loss or in a zero_grad between them): not saved for it.
        if (!alive && span && a.end < nextBackward[size_t(span - ph.spans.data())] &&
            nextBackward[size_t(span - ph.spans.data())] != INT64_MAX)
            return {C::Temporary, R::ForwardFreedBeforeBackward, birth};
        return {C::Activation, R::ForwardOutlivesPass, birth};
    case Phase::Backward:
        if (!diesInSpan)
            return {C::Gradient, R::BackwardOutlivesPass, birth};
        if ((a.end - a.start) * 2 > (span->endEvent - span->startEvent + 1))
            return {C::AutogradDetail, R::BackwardHeldToEnd, birth};
        return {C::Temporary, R::SamePhaseTemporary, birth};
    case Phase::Optimizer:
        if (diesInSpan)
            return {C::Temporary, R::SamePhaseTemporary, birth};
        return {C::OptimizerState, R::OptimizerFirstStepState, birth};
    case Phase::Other:
        break;
    }
    return {C::Unknown, R::UnknownPhase, birth};
}

/// Optimizer state is shaped like the parameters it tracks (Adam's moments: zeros_like(p); a
/// bf16 model's fp32 state 2x, 8-bit state 1/4 or 1/2) or is a small step counter. What the step
/// keeps otherwise (a batch made inside a closure, a norm) is not evidence of state.
void requireStateEvidence(const MemoryTimeline& timeline, std::vector<AllocationClass>& classes)
{
    constexpr int64_t kCounterBytes = 4096;
    std::unordered_set<int64_t> shaped;
    for (size_t i = 0; i < classes.size(); ++i) {
        if (classes[i].category != TensorCategory::Parameter)
            continue;
        const int64_t p = timeline.allocations[i].size;
        for (int64_t s : {p, 2 * p, p / 2, p / 4})
            shaped.insert(s);
    }
    for (size_t i = 0; i < classes.size(); ++i) {
        AllocationClass& c = classes[i];
        const int64_t size = timeline.allocations[i].size;
        if (c.rule == CategoryRule::OptimizerFirstStepState && size > kCounterBytes && !shaped.empty() &&
            !shaped.count(size)) {
            c.category = TensorCategory::Unknown;
            c.rule = CategoryRule::OptimizerKeptNotState;
        }
    }
}

/// A step an OOM cut short never frees its batch: what its data phase made (after the last
/// optimizer step, before the OOM) and the trace ends with is the batch, not memory kept for
/// nothing known (written from the CPU recorder's OOM cases, tools/category_truth.py).
void batchOfCutStep(const DeviceData& device, const MemoryTimeline& timeline, const PhaseAnalysis& phases,
                    std::vector<AllocationClass>& classes)
{
    if (device.ooms.empty())
        return;
    int64_t lastStep = -1;
    for (const PhaseSpan& s : phases.spans)
        if (s.phase == Phase::Optimizer)
            lastStep = std::max(lastStep, s.endEvent);
    const int64_t oom = device.ooms.back().eventIndex;
    for (size_t i = 0; i < classes.size(); ++i) {
        const Allocation& a = timeline.allocations[i];
        if (classes[i].rule == CategoryRule::SetupKeptAfterTraining && a.start > lastStep && a.start < oom)
            classes[i] = {TensorCategory::Input, CategoryRule::SetupBatchOfCutStep, classes[i].birthPhase};
    }
}

} // namespace

std::vector<AllocationClass> CategoryClassifier::classify(const Snapshot& snapshot, const DeviceData& device,
                                                          const MemoryTimeline& timeline,
                                                          const PhaseAnalysis& phases)
{
    std::vector<AllocationClass> out;
    out.reserve(timeline.allocations.size());
    const auto& exact = device.trace.category;
    const std::vector<int64_t> nextBackward = nextBackwardStarts(phases);
    FrameworkSites sites(snapshot.frames);
    for (const Allocation& a : timeline.allocations) {
        if (phases.eventPhase.empty()) {
            // No trace: only the final state is known.
            out.push_back({TensorCategory::Unknown, CategoryRule::BeforeWindowOther, Phase::Setup});
            continue;
        }
        AllocationClass c = classifyOne(snapshot.frames, sites, a, phases, nextBackward);
        if (!exact.empty() && a.start >= 0 && static_cast<size_t>(a.start) < exact.size() &&
            exact[a.start] < static_cast<uint8_t>(kTensorCategoryCount)) {
            c.category = static_cast<TensorCategory>(exact[a.start]);
            c.rule = CategoryRule::ExactFromProfiler;
        }
        out.push_back(c);
    }
    requireStateEvidence(timeline, out);
    batchOfCutStep(device, timeline, phases, out);
    return out;
}

} // namespace headroom
