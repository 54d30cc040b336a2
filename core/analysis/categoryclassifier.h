// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/phase.h"
#include "core/analysis/phaseclassifier.h"
#include "core/model/tensorcategory.h"
#include "core/replay/replay.h"

#include <string_view>
#include <vector>

namespace headroom {

/// Which rule decided an allocation's category, so the user can see why (docs/categories-and-phases.md).
enum class CategoryRule : uint8_t {
    ExactFromProfiler,       ///< the source carries the profiler's category
    AliveThroughWindow,      ///< alive before the trace and at its end
    FreedByZeroGrad,         ///< alive before the trace, freed in the optimizer phase
    SavedBeforeWindow,       ///< alive before the trace, freed in backward
    BeforeWindowOther,       ///< alive before the trace, nothing else known
    ModuleSetupFrames,       ///< born in setup under module construction / .to() frames
    SetupBeforeForward,      ///< born in setup before the first forward, never freed
    SetupFreedLater,         ///< born in data/setup code, freed after the step began
    SetupKeptAfterTraining,  ///< born in setup after training started, never freed
    SamePhaseTemporary,      ///< born and freed in the same phase span
    ForwardSavedForBackward, ///< born in forward or loss, freed in backward
    ForwardOutlivesPass,     ///< born in forward or loss, alive past backward
    ForwardFreedBeforeBackward, ///< born in forward, freed in a later forward or loss span: not saved
    BackwardOutlivesPass,    ///< born in backward, alive after backward ends
    BackwardHeldToEnd,       ///< born in backward, held for most of it
    OptimizerFirstStepState, ///< born in the optimizer, alive after its step, parameter-shaped
    OptimizerKeptNotState,   ///< born in the optimizer, kept, but shaped like no parameter
    UnknownPhase,            ///< born in an unclassified phase
    // Memory from before the recording, read from the copies of the parameter set (prerecording.h).
    BeforeWindowWeights,     ///< one copy of the parameter set alive before the trace: the weights
    BeforeWindowState,       ///< a further copy: optimizer state
    BeforeWindowGradient,    ///< a further copy: gradients kept across steps
    BeforeWindowUndecided,   ///< a further copy the evidence leaves undecided
    FreedByOptimizerUpdate,  ///< alive before the trace, freed by the optimizer's update: replaced state
    BeforeWindowStateBySize, ///< alive before the trace, of a size no weight takes, computed with in the step
    SetupBatchOfCutStep,     ///< born in the data phase of the step an OOM cut short, alive at the OOM: its batch
    CutForwardAsCompleteStep, ///< born in the forward an OOM cut short, alive at the OOM; the same line's tensor in a complete step was freed in its forward
    // Frameworks' own memory, by the code that allocates it (frameworksites.h).
    DdpGradientBucket,       ///< DDP's Reducer, outliving its phase: a flat gradient bucket
    DdpConstructionTemporary, ///< DDP's constructor otherwise: its broadcast and shape check
    EngineKvCache,           ///< an inference engine's KV cache (vLLM, SGLang)
    FlatParameterBuffer,     ///< a framework's flat parameters (Megatron's param_data, DeepSpeed's groups)
    FlatGradientBuffer,      ///< a framework's flat gradients (Megatron's grad_data, DeepSpeed's buckets)
    MasterWeights,           ///< a framework's fp32 main parameters (Megatron, DeepSpeed): optimizer state
    FrameworkTemporary,      ///< made by a framework's site and freed within its phase (a clone, a gather)
    BeforeWindowFactoredState, ///< alive before the trace, one of the factors the gradients' shapes predict
    BeforeWindowLikeFreeSite,  ///< alive before the trace, freed where the trace's tensors of its size, all of one category, are
    FrameworkGather,           ///< a layer's parameters all-gathered by FSDP or DeepSpeed ZeRO-3
    FrameworkUnshardedGradient, ///< born in the backward, freed by FSDP's or ZeRO-3's reduction: a gathered layer's gradient
    EngineModelLoad,           ///< made under an inference engine's model loader and kept: the engine's weights
};

inline constexpr CategoryRule kLastCategoryRule = CategoryRule::EngineModelLoad;

/// A layer's parameters or its unsharded gradient, whole on the device under FSDP or ZeRO-3:
/// the layer's size at any batch and any world size (the what-if's gather term).
inline bool gathersLayer(CategoryRule r)
{
    return r == CategoryRule::FrameworkGather || r == CategoryRule::FrameworkUnshardedGradient;
}
/// Made at a framework's own site (frameworksites.h): shaped like the parameters or the
/// gradients, or a cache sized by its own setting; never like the batch.
bool frameworkMade(CategoryRule r);

std::string_view categoryRuleText(CategoryRule r);

struct AllocationClass {
    TensorCategory category = TensorCategory::Unknown;
    CategoryRule rule = CategoryRule::UnknownPhase;
    Phase birthPhase = Phase::Other; ///< Setup for allocations from before the window
};

/// Gives every replayed allocation a tensor category, from exact profiler categories when
/// the source has them, else from its birth phase, death phase and lifetime.
class CategoryClassifier {
public:
    static std::vector<AllocationClass> classify(const Snapshot& snapshot, const DeviceData& device,
                                                 const MemoryTimeline& timeline, const PhaseAnalysis& phases);
};

} // namespace headroom
