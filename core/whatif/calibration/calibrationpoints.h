// SPDX-License-Identifier: MIT
#pragma once
// Where the calibration reads a trace (docs/whatif-model.md, "The terms"): which iteration is
// the steady state, the three measured points inside it, and the batch and sequence its
// tensor sizes tell. The first stages of calibrate(), apart so that each can be named.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/replay.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

/// A saved activation or autograd's detail: what the batch and sequence levers grow.
bool isActivationCategory(TensorCategory c);
/// A temporary, an input or memory no rule classified: what the calibration weighs as
/// transient unless it outlives the iteration.
bool isTemporaryCategory(TensorCategory c);
/// Whether a temporary of `bytes` grows with the batch. One below 1 MiB counts as constant
/// (workspaces, scalars) unless it has a token dimension: a multiple of `tokens` (b*s, 0 when
/// unknown) elements of at least 4 bytes. On a small model the logits, the loss's
/// log-probabilities and their gradients are all below 1 MiB and grow with the batch (whatif
/// --verify on the CPU matrix's decoder: 0 B projected against 2 MiB at x4). The allocator's
/// smallest block is left out: a tensor that fits in it does not shrink with the batch, and
/// its true size (below 512 bytes) says when it starts to grow.
bool batchShaped(int64_t bytes, int64_t tokens);

/// What is alive after one event, as the calibration reads it.
struct LivePoint {
    std::map<TensorCategory, int64_t> byCat;
    std::vector<std::pair<TensorCategory, int64_t>> allocs; ///< category, size
    std::vector<uint32_t> stacks;                           ///< the stack of each of `allocs`
    std::vector<uint32_t> index;                            ///< into MemoryTimeline::allocations
    std::vector<CategoryRule> rules;                        ///< the classifier's rule for each of `allocs`
    /// A layer gathered whole by FSDP or ZeRO-3 (categoryclassifier.h gathersLayer): the
    /// what-if's `gather` term, as large at any batch.
    bool gathered(size_t i) const { return gathersLayer(rules[i]); }
    /// Made at a framework's own site: parameter- or gradient-shaped, constant in the batch.
    bool frameworkMade(size_t i) const { return headroom::frameworkMade(rules[i]); }
    double bytes(TensorCategory c) const;                   ///< of category `c`
    /// Of the allocations the classifier gave rule `r` (`a`: the analysis this point came from).
    double bytesByRule(const DeviceAnalysis& a, CategoryRule r) const;
};
LivePoint livePointAt(const MemoryTimeline& tl, const DeviceAnalysis& a, int64_t e);

/// The iteration the calibration reads: past the first when there are several, with an
/// optimizer step where any has one, not an outlier batch (above 1.2x the median of three or
/// more); the largest of the rest.
struct SteadyIteration {
    size_t index = 0;          ///< into DeviceAnalysis::iterationPeaks
    bool optimizer = false;    ///< it holds an optimizer step
    bool backward = false;     ///< it holds a backward
    bool outlierBatch = false; ///< an iteration was left out as an outlier batch
};
SteadyIteration chooseSteadyIteration(const DeviceAnalysis& a);

/// The measured points of one iteration (events; -1: none).
struct MeasuredPoints {
    int64_t startOfBackward = -1; ///< the highest point outside the optimizer step (or forcedStart)
    int64_t endOfBackward = -1;   ///< the last backward event
    int64_t optimizer = -1;       ///< the highest point of the optimizer step
    /// A second reading of the start of backward: the late point where gradients outgrow the
    /// activations they replace, or the forward/backward boundary (at most one is set).
    int64_t latePoint = -1;
    int64_t boundaryPoint = -1;
    int backwardSpans = 0; ///< backward passes in the iteration (the accumulation steps)
};
/// `forcedStart` >= 0 reads the start of backward there (the second reading's calibration).
MeasuredPoints measuredPoints(const MemoryTimeline& tl, const DeviceAnalysis& a, const IterationPeak& it,
                              int64_t forcedStart);

/// The micro-batch and sequence the sizes of the saved activations tell, given the model's
/// hidden size and head count: b*s from the most common b*s*h activation (at least 64 tokens),
/// s from the b*a*s^2 attention scores, else from the sequence or micro-batch already known.
struct SizeReading {
    int microBatch = 0;
    int seq = 0;
    std::string detail; ///< how, for the measured list
};
std::optional<SizeReading> readBatchFromSizes(const std::vector<std::pair<TensorCategory, int64_t>>& allocs,
                                              const ModelDims& dims, std::optional<int> knownSeq,
                                              std::optional<int> knownBatch);

} // namespace headroom
