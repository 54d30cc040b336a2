// SPDX-License-Identifier: MIT
#include "core/analysis/categoryclassifier.h"

#include "core/analysis/frameworksites.h"
#include "core/analysis/phaseclassifier.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <climits>
#include <optional>
#include <unordered_set>

namespace headroom {

bool frameworkMade(CategoryRule r)
{
    using R = CategoryRule;
    switch (r) {
    case R::DdpGradientBucket:
    case R::DdpConstructionTemporary:
    case R::EngineKvCache:
    case R::EngineModelLoad:
    case R::FlatParameterBuffer:
    case R::FlatGradientBuffer:
    case R::MasterWeights:
    case R::FrameworkTemporary:
    case R::FrameworkGather:
    case R::FrameworkUnshardedGradient:
        return true;
    default:
        return false;
    }
}

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
    case CategoryRule::CutForwardAsCompleteStep:
        return "born in the forward an OOM cut short; the same line freed its tensor in the forward of a complete step";
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
    case CategoryRule::EngineKvCache:
        return "allocated by an inference engine's cache code (vLLM's KV cache allocation, SGLang's memory pool): "
               "the KV cache";
    case CategoryRule::FlatParameterBuffer:
        return "allocated by a training framework's flat parameter buffer (Megatron's param_data, the first of its "
               "buffer's two statements; DeepSpeed's flat 16-bit groups or partitions; FSDP's sharded parameters)";
    case CategoryRule::FlatGradientBuffer:
        return "allocated by a training framework's flat gradient buffer (Megatron's grad_data; DeepSpeed's reduce "
               "bucket or gradient partition; FSDP's reduce-scattered gradient shard)";
    case CategoryRule::MasterWeights:
        return "allocated by a training framework as fp32 main parameters (Megatron's DistributedOptimizer, "
               "DeepSpeed's fp32 partitions) and kept: master weights, the optimizer's state";
    case CategoryRule::FrameworkTemporary:
        return "allocated at a training framework's own site and freed within its phase (the 16-bit clone before "
               "an fp32 copy, a layer's gathered parameters)";
    case CategoryRule::BeforeWindowStateBySize:
        return "alive before the trace, of a size the weights do not take, and the optimizer step computes with "
               "blocks of that size: state of its own shape (a factored second moment)";
    case CategoryRule::FrameworkGather:
        return "allocated by a sharding framework's all-gather of a layer's parameters for its forward or backward "
               "(FSDP, DeepSpeed ZeRO-3): a temporary gather";
    case CategoryRule::FrameworkUnshardedGradient:
        return "born in the backward and freed by FSDP's reduce-scatter or DeepSpeed ZeRO-3's gradient bucket once "
               "reduced: a gathered layer's unsharded gradient, a temporary of the layer's size";
    case CategoryRule::EngineModelLoad:
        return "allocated while an inference engine's model loader builds and loads its model (vLLM's or SGLang's "
               "model_loader on the stack) and kept: the engine's weights, with the buffers its model makes";
    case CategoryRule::BeforeWindowLikeFreeSite:
        return "alive before the trace, freed at a statement that later frees tensors of the same size born in the "
               "trace, all of one category: that category";
    case CategoryRule::BeforeWindowFactoredState:
        return "alive before the trace, and one of the blocks the gradients' shapes predict for a factored second "
               "moment (Adafactor's row and column means per matrix, the whole moment per vector)";
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

/// A framework's own allocation, by its site: DDP's buckets whatever phase rebuilt them, a KV
/// cache whenever it is made. The sites told apart by their lines (Megatron's buffer, DeepSpeed's
/// constructor) are settled for the whole trace afterwards (splitByLine).
std::optional<AllocationClass> frameworkClass(FrameworkSite site, Phase birth, bool diesInSpan)
{
    using C = TensorCategory;
    using R = CategoryRule;
    using S = FrameworkSite;
    switch (site) {
    case S::None:
    case S::ZeroRedundancyOptimizer:
        return std::nullopt;
    case S::DdpReducer:
        if (diesInSpan)
            return std::nullopt;
        return AllocationClass{C::Gradient, R::DdpGradientBucket, birth};
    case S::DdpConstruction:
        return AllocationClass{C::Temporary, R::DdpConstructionTemporary, birth};
    case S::VllmKvCache:
    case S::SglangKvCache:
        return AllocationClass{C::KvCache, R::EngineKvCache, birth};
    case S::DeepSpeedGather:
    case S::FsdpGather:
        return AllocationClass{C::Temporary, R::FrameworkGather, birth};
    case S::FsdpCast:
        return AllocationClass{C::Temporary, R::FrameworkTemporary, birth};
    default:
        break;
    }
    if (diesInSpan) // the 16-bit clone an fp32 copy is made from, a bucket used once, a loader's staging copy
        return AllocationClass{C::Temporary, R::FrameworkTemporary, birth};
    switch (site) {
    case S::EngineModelLoad:
        return AllocationClass{C::EngineWeights, R::EngineModelLoad, birth};
    case S::MegatronParamAndGradBuffer: // splitByLine decides param_data from grad_data
    case S::DeepSpeedParamPartition:
    case S::FsdpFlatParameter:
        return AllocationClass{C::Parameter, R::FlatParameterBuffer, birth};
    case S::DeepSpeedGradBuffer:
    case S::DeepSpeedZero2GradPartition:
    case S::DeepSpeedGradReduce:
    case S::FsdpReduceScatter:
        return AllocationClass{C::Gradient, R::FlatGradientBuffer, birth};
    case S::DeepSpeedZeroInit: // splitByLine: the first statement's are the 16-bit groups
    case S::MegatronMainParams:
    case S::MegatronFloat16MainParams:
    case S::DeepSpeedMasterPartition:
        return AllocationClass{C::OptimizerState, R::MasterWeights, birth};
    default:
        return std::nullopt;
    }
}

AllocationClass classifyOne(const FrameTable& ft, FrameworkSites& sites, const Allocation& a,
                            const PhaseAnalysis& ph, const std::vector<int64_t>& nextBackward)
{
    using C = TensorCategory;
    using R = CategoryRule;
    const bool alive = a.end == Allocation::kStillAlive;
    if (a.start == Allocation::kBeforeWindow) {
        // A framework's buffers made before the recording began (a KV cache at engine start)
        // keep their site's reading: their blocks carry the stack.
        if (auto fw = frameworkClass(sites.of(a.stack), Phase::Setup, false))
            return *fw;
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

/// The k-th allocation of each stack inside iteration `it`, by allocation index: a step's lines
/// run in the same order in every step, so the k-th of a stack in one step is the k-th in another.
uint64_t stackOrdinal(uint32_t stack, uint32_t k) { return uint64_t(stack) << 32 | k; }

std::unordered_map<uint64_t, size_t> byStackOrdinal(const MemoryTimeline& timeline, const Iteration& it)
{
    std::unordered_map<uint64_t, size_t> out;
    std::unordered_map<uint32_t, uint32_t> seen;
    for (size_t i = 0; i < timeline.allocations.size(); ++i) {
        const Allocation& a = timeline.allocations[i];
        if (a.start >= it.startEvent && a.start <= it.endEvent)
            out[stackOrdinal(a.stack, seen[a.stack]++)] = i;
    }
    return out;
}

/// A forward an OOM stopped never frees the output of the op before the failing one: a
/// temporary (a batch norm's output the next add takes and nothing saves) is alive at the end
/// of the trace, as the activations saved for the backward are, and the rule above reads it
/// as one. Where the trace holds a complete step before the cut one, the same line's tensor
/// there (the k-th of its stack) says which it was: freed in its forward, a temporary.
/// Written from the CPU convnet's OOM in its forward (tools/category_truth.py, oom_forward).
void cutForwardAsCompleteStep(const DeviceData& device, const MemoryTimeline& timeline, const PhaseAnalysis& phases,
                              std::vector<AllocationClass>& classes)
{
    if (device.ooms.empty() || phases.iterations.size() < 2)
        return;
    const int cut = phases.iterationOf(device.ooms.back().eventIndex);
    if (cut < 1)
        return;
    const Iteration& now = phases.iterations[size_t(cut)];
    const auto before = byStackOrdinal(timeline, phases.iterations[size_t(cut - 1)]);
    std::unordered_map<uint32_t, uint32_t> seen;
    for (size_t i = 0; i < timeline.allocations.size(); ++i) {
        const Allocation& a = timeline.allocations[i];
        if (a.start < now.startEvent || a.start > now.endEvent)
            continue;
        const uint32_t k = seen[a.stack]++;
        if (classes[i].rule != CategoryRule::ForwardOutlivesPass)
            continue;
        const auto match = before.find(stackOrdinal(a.stack, k));
        if (match != before.end() && classes[match->second].category == TensorCategory::Temporary &&
            classes[match->second].birthPhase == Phase::Forward)
            classes[i] = {TensorCategory::Temporary, CategoryRule::CutForwardAsCompleteStep, classes[i].birthPhase};
    }
}

/// Memory from before the trace freed at a statement that, on a later pass, frees tensors of the
/// same size born in the trace: it is what they are (a window that begins mid-forward frees that
/// forward's temporaries at the lines that free the next forward's). Only tensors born after it
/// was freed vote (one statement frees the loss beside the batch it was computed from), and they
/// must all agree; the free must have a stack: the site, not the moment, is the evidence.
void likeItsFreeSite(const DeviceData& device, const MemoryTimeline& timeline, std::vector<AllocationClass>& classes)
{
    // Most traces hold no such block: the index of every free below is built only for one.
    if (std::none_of(classes.begin(), classes.end(),
                     [](const AllocationClass& c) { return c.rule == CategoryRule::BeforeWindowOther; }))
        return;
    const std::vector<uint32_t>& stacks = device.trace.stack;
    auto siteOf = [&](const Allocation& a) -> std::optional<std::pair<uint32_t, int64_t>> {
        if (a.end < 0 || size_t(a.end) >= stacks.size() || stacks[size_t(a.end)] == 0)
            return std::nullopt;
        return std::pair(stacks[size_t(a.end)], a.size);
    };
    // Per site, the trace's tensors freed there: birth event and category.
    std::map<std::pair<uint32_t, int64_t>, std::vector<std::pair<int64_t, TensorCategory>>> freedAt;
    for (size_t i = 0; i < classes.size(); ++i) {
        const auto site = timeline.allocations[i].start >= 0 ? siteOf(timeline.allocations[i]) : std::nullopt;
        if (site && classes[i].category != TensorCategory::Unknown)
            freedAt[*site].emplace_back(timeline.allocations[i].start, classes[i].category);
    }
    for (size_t i = 0; i < classes.size(); ++i) {
        if (classes[i].rule != CategoryRule::BeforeWindowOther)
            continue;
        const auto site = siteOf(timeline.allocations[i]);
        const auto it = site ? freedAt.find(*site) : freedAt.end();
        if (it == freedAt.end())
            continue;
        std::optional<TensorCategory> agreed;
        bool disagree = false;
        for (const auto& [born, category] : it->second)
            if (born > timeline.allocations[i].end) {
                disagree = disagree || (agreed && *agreed != category);
                agreed = category;
            }
        if (agreed && !disagree)
            classes[i] = {*agreed, CategoryRule::BeforeWindowLikeFreeSite, Phase::Setup};
    }
}

/// FSDP's and DeepSpeed ZeRO-3's unsharded gradients: autograd makes a gathered layer's gradient
/// at its own site, and the reduction frees it once reduced (FSDP2's foreach_reduce clears its
/// list after the copy-in; FSDP1's _reduce_grad drops flat_param.grad; ZeRO-3's
/// __add_grad_to_ipg_bucket points param.grad into its bucket, or partition_grads drops it). The
/// free's stack is the evidence. Only
/// within the backward it was made in: one kept across micro-steps (no_sync) is the gradient.
void freedByReduceScatter(FrameworkSites& sites, const DeviceData& device, const MemoryTimeline& timeline,
                          const PhaseAnalysis& phases, std::vector<AllocationClass>& classes)
{
    const std::vector<uint32_t>& stacks = device.trace.stack;
    for (size_t i = 0; i < classes.size(); ++i) {
        const Allocation& a = timeline.allocations[i];
        if (a.start < 0 || a.end < 0 || size_t(a.end) >= stacks.size() || classes[i].birthPhase != Phase::Backward ||
            classes[i].rule == CategoryRule::ExactFromProfiler || sites.of(a.stack) != FrameworkSite::None)
            continue;
        const PhaseSpan* span = phases.spanOf(a.start);
        if (!span || a.end > span->endEvent)
            continue;
        if (const FrameworkSite freedBy = sites.of(stacks[size_t(a.end)]);
            freedBy == FrameworkSite::FsdpReduceScatter || freedBy == FrameworkSite::DeepSpeedGradReduce)
            classes[i] = {TensorCategory::Temporary, CategoryRule::FrameworkUnshardedGradient, Phase::Backward};
    }
}

/// Megatron's buffer makes param_data then grad_data, DeepSpeed ZeRO-1/2's constructor its flat
/// 16-bit groups then its fp32 partitions: two statements of one function, the first the
/// parameters. Per site, the kept allocations of its lowest line are the first statement's when
/// the site has two lines or more; with one line only, Megatron's is grad_data (param_data is
/// made only for the distributed optimizer) and DeepSpeed's stays undecided as fp32 state.
void splitByLine(FrameworkSites& sites, const MemoryTimeline& timeline, std::vector<AllocationClass>& classes)
{
    for (const FrameworkSite site : {FrameworkSite::MegatronParamAndGradBuffer, FrameworkSite::DeepSpeedZeroInit}) {
        std::vector<std::pair<size_t, int64_t>> kept; // allocation, line
        int64_t low = INT64_MAX, high = 0;
        for (size_t i = 0; i < classes.size(); ++i) {
            const Allocation& a = timeline.allocations[i];
            if (classes[i].rule == CategoryRule::FrameworkTemporary || sites.of(a.stack) != site)
                continue;
            const int64_t line = sites.line(a.stack);
            kept.emplace_back(i, line);
            low = std::min(low, line);
            high = std::max(high, line);
        }
        const bool twoStatements = !kept.empty() && high > low;
        for (const auto& [i, line] : kept) {
            const bool first = twoStatements && line == low;
            if (site == FrameworkSite::MegatronParamAndGradBuffer)
                classes[i] = first ? AllocationClass{TensorCategory::Parameter, CategoryRule::FlatParameterBuffer, classes[i].birthPhase}
                                   : AllocationClass{TensorCategory::Gradient, CategoryRule::FlatGradientBuffer, classes[i].birthPhase};
            else if (first)
                classes[i] = {TensorCategory::Parameter, CategoryRule::FlatParameterBuffer, classes[i].birthPhase};
        }
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
    splitByLine(sites, timeline, out);
    freedByReduceScatter(sites, device, timeline, phases, out);
    requireStateEvidence(timeline, out);
    batchOfCutStep(device, timeline, phases, out);
    cutForwardAsCompleteStep(device, timeline, phases, out);
    likeItsFreeSite(device, timeline, out);
    return out;
}

} // namespace headroom
