// SPDX-License-Identifier: MIT
#pragma once

// Mixed precision (bf16 autocast) of an fp32 run, as a transformation of its history, from
// the op graph a recorder wrote (docs/whatif-model.md, "Autocast from the op graph"). Autocast
// runs some ops in bf16 and casts their fp32 inputs first; the others take their inputs'
// dtype. Which allocation the autocast run makes in bf16, which copies it adds and how long
// each lives follow from each allocation's op, its inputs and what autograd saved: evidence
// the sizes of an fp32 trace do not hold. The policy is the target device's: PyTorch 1.13's on
// the CPU, where the recorder that writes the graph runs, or CUDA's (PyTorch 2.x's lists) where
// the file names a GPU as its target.

#include "core/analysis/phaseclassifier.h"
#include "core/model/frametable.h"
#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

/// Whose autocast op lists a plan applies.
enum class AutocastLists : uint8_t {
    Cpu113, ///< PyTorch 1.13's on the CPU, probed op by op: softmax and layer_norm run in bf16
    Cuda,   ///< CUDA's (aten/src/ATen/autocast_mode.h): softmax, layer_norm, pow, exp ... in fp32
};

/// The lists for the device a file's run is projected to: CUDA's unless the CPU recorder wrote
/// it (`headroom_config` recorder headroom_cpu) without naming a GPU target (`target_device`).
AutocastLists autocastListsFor(const Snapshot& snapshot);
const char* autocastListsName(AutocastLists lists);

struct AutocastPlan {
    /// A copy the autocast run makes that the fp32 run did not: made at `start` (before the
    /// op's output), freed at `end` (before that event's own boundaries; -1: still alive).
    struct Copy {
        int64_t start = 0, end = -1;
        uint32_t source = 0; ///< the allocation copied: the copy follows its law
        /// A bf16 copy of an fp32 tensor (half its measured bytes), else an fp32 copy of a
        /// tensor the autocast run makes in bf16 (its measured bytes).
        bool narrow = true;
        /// The share of the source's measured bytes copied (a no-op cast of a slice: the
        /// rotary tables' first rows), before the narrowing.
        double share = 1;
    };
    /// Per allocation: made in bf16 by the autocast run (half its measured bytes); the rest
    /// keep their bytes. Empty: no plan.
    std::vector<uint8_t> narrowed;
    std::vector<Copy> copies;
    /// Allocations whose fp32 original only bf16 ops saved (autograd keeps their copies
    /// instead): freed after their last use in the forward, at this event.
    std::vector<std::pair<uint32_t, int64_t>> earlyEnds;
    int64_t narrowedCount = 0, weightCopies = 0, regions = 0;
    int64_t recordedCasts = 0; ///< op inputs read through a no-op cast the recorder named
    int64_t fp32Ops = 0;       ///< ops the lists run in fp32 whose inputs were bf16: copied up
    AutocastLists lists = AutocastLists::Cpu113;

    bool empty() const { return narrowed.empty(); }
};

/// The plan where the recorder wrote the op graph for the allocations of the forwards (nine in
/// ten or more of them) and its phase windows (`annotations`) show at least one forward; else
/// empty. `phases` tells the backward's events.
AutocastPlan planAutocast(const MemoryTimeline& tl, const TraceEvents& events, const FrameTable& frames,
                          const PhaseAnalysis& phases, const std::vector<Annotation>& annotations,
                          AutocastLists lists = AutocastLists::Cpu113);

/// Pure bf16 (`model.to(torch.bfloat16)`) of an fp32 run by the same flow, where the op graph
/// covers the forwards: every tensor no floating-point input decides is bf16, the ops follow
/// their inputs, and the casts that were no-ops in fp32 (an RMSNorm's `x.to(torch.float32)`)
/// keep what they ask for, with their copies. The backward's allocations take the target width
/// (its casts back are no op in the trace). Empty without the graph.
AutocastPlan planPureFlow(const MemoryTimeline& tl, const TraceEvents& events, const FrameTable& frames,
                          const PhaseAnalysis& phases);

} // namespace headroom
