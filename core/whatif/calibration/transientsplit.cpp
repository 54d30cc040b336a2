// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/transientsplit.h"

#include "core/replay/allocatorconstants.h"

#include <algorithm>
#include <map>
#include <set>

namespace headroom {

namespace {

/// Autograd gives a gradient the dtype of the tensor it is the gradient of: the loss's
/// tensors (fp32 under autocast) get theirs first, before any weight gradient; what the
/// backward allocates after this backward's first weight gradient are gradients of the
/// network's activations, and under autocast they are as wide as those activations.
/// The weight gradients this backward allocated before the reading also say how far it
/// got (gradients alive from before it, kept or accumulated, say nothing).
struct BackwardProgress {
    int64_t firstWeightGrad = -1;
    double gradients = 0;
};

BackwardProgress backwardProgress(const TransientReading& r)
{
    BackwardProgress b;
    const auto& phase = r.phase;
    const int64_t e1 = r.point;
    if (size_t(e1) >= phase.size() || phase[size_t(e1)] != Phase::Backward)
        return b;
    int64_t spanStart = e1;
    while (spanStart > r.iteration.startEvent && phase[size_t(spanStart - 1)] == Phase::Backward)
        --spanStart;
    const LivePoint& L1 = r.live;
    for (size_t i = 0; i < L1.allocs.size(); ++i) {
        const int64_t start = r.timeline.allocations[L1.index[i]].start;
        if (L1.allocs[i].first != TensorCategory::Gradient || start < spanStart)
            continue;
        b.gradients += double(L1.allocs[i].second);
        if (b.firstWeightGrad < 0 || start < b.firstWeightGrad)
            b.firstWeightGrad = start;
    }
    return b;
}

} // namespace

TransientSplit splitTransients(const TransientReading& r)
{
    const LivePoint& L1 = r.live;
    const MemoryTimeline& tl = r.timeline;
    std::set<int64_t> paramSizes;
    std::map<int64_t, int> castsLeft; ///< per weight size: how many casts of it may still be seen
    for (const auto& [c, sz] : L1.allocs)
        if (c == TensorCategory::Parameter) {
            paramSizes.insert(sz);
            ++castsLeft[sz];
        }
    TransientSplit out;
    const BackwardProgress progress = backwardProgress(r);
    out.backwardDone = r.gradients > 0 ? std::min(1.0, progress.gradients / r.gradients) : 0;
    auto persistent = [&](size_t i) {
        const Allocation& al = tl.allocations[L1.index[i]];
        return al.start < r.iteration.startEvent && (al.end == Allocation::kStillAlive || al.end > r.iteration.endEvent);
    };
    auto quadratic = [&](size_t i) { return r.laws && r.laws->laws()[L1.index[i]].central == SizeLaw::TokensBySeq; };
    for (size_t i = 0; i < L1.allocs.size(); ++i) {
        const auto [c, sz] = L1.allocs[i];
        if (L1.gathered(i)) {
            out.gathers += double(sz);
            continue;
        }
        if (isEngineMemory(c)) {
            (c == TensorCategory::KvCache ? out.kvCache : out.engineWeights) += double(sz);
            continue;
        }
        if (isActivationCategory(c)) {
            if (sz <= allocator::kMinBlock) {
                // In the allocator's smallest block: it does not shrink with the batch and grows
                // only once its true size (unknown, below 512 bytes) passes the block, but there
                // is one per step of the sequence (the CPU matrix's LSTM keeps 384 per-step
                // tensors there: 192 KiB that follow the sequence, not the batch).
                out.small += double(sz);
                continue;
            }
            // The autocast cast of an fp32 weight, saved for backward: half a weight's size,
            // at most one per weight of that size. Sizes alone cannot tell a cast from an
            // activation of the same size (b*s equal to the hidden size makes every b*s*h
            // bf16 activation half an h*h weight), so the rest of that size are activations.
            if (r.amp && paramSizes.count(sz * 2) && castsLeft[sz * 2] > 0) {
                --castsLeft[sz * 2];
                out.autocastCache += double(sz);
                continue;
            }
            const bool isQuad = quadratic(i);
            (isQuad ? out.quadratic : out.linear) += double(sz);
            out.savedScores.push_back({sz, tl.allocations[L1.index[i]].start, isQuad});
        } else if (isTemporaryCategory(c)) {
            // Unclassified memory that lives through the whole iteration is state (an
            // optimizer outside torch.optim, a cache), not a batch-sized temporary.
            const bool constant = !batchShaped(sz, r.tokens) || L1.frameworkMade(i) ||
                                  (c == TensorCategory::Unknown && persistent(i));
            (constant ? out.constTemps : out.batchTemps) += double(sz);
            if (!constant && quadratic(i))
                out.tempScores.push_back({sz, tl.allocations[L1.index[i]].start, true});
            if (!constant && progress.firstWeightGrad >= 0 && tl.allocations[L1.index[i]].start > progress.firstWeightGrad)
                out.batchGradTemps += double(sz);
        }
    }
    return out;
}

} // namespace headroom
