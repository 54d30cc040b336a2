// SPDX-License-Identifier: MIT
#include "core/whatif/replay/checkpointplan.h"

#include "core/whatif/vocabulary/moduleblocks.h"

#include <algorithm>
#include <limits>

namespace headroom {

SavedSequence savedSequence(const MemoryTimeline& tl, std::vector<uint32_t> saved)
{
    std::stable_sort(saved.begin(), saved.end(),
                     [&](uint32_t x, uint32_t y) { return tl.allocations[x].start < tl.allocations[y].start; });
    bool stacks = false;
    for (uint32_t i : saved)
        stacks |= tl.allocations[i].stack != 0;
    SavedSequence out;
    for (uint32_t i : saved) {
        const Allocation& a = tl.allocations[i];
        const uint64_t key = stacks ? a.stack : uint64_t(a.size);
        if (stacks && !out.keys.empty() && out.keys.back() == key) {
            out.bytes.back() += a.size;
            out.items.back().push_back(i);
            continue;
        }
        out.keys.push_back(key);
        out.bytes.push_back(a.size);
        out.items.push_back({i});
    }
    return out;
}

namespace {

struct SavedBlock {
    std::vector<uint32_t> allocs;
    uint32_t output = 0;
    int64_t forwardEnd = 0;
    int64_t firstFree = std::numeric_limits<int64_t>::max(); ///< of its tensors other than the output
};

/// A block's output is its last saved tensor (a residual sum, saved by the next block's first
/// op): checkpointed, it stays alive as the next block's input.
SavedBlock blockOf(const MemoryTimeline& tl, std::vector<uint32_t> allocs)
{
    SavedBlock b;
    b.allocs = std::move(allocs);
    b.output = b.allocs.front();
    for (uint32_t i : b.allocs)
        if (tl.allocations[i].start > tl.allocations[b.output].start)
            b.output = i;
    b.forwardEnd = tl.allocations[b.output].start;
    for (uint32_t i : b.allocs)
        if (i != b.output && tl.allocations[i].end != Allocation::kStillAlive)
            b.firstFree = std::min<int64_t>(b.firstFree, tl.allocations[i].end);
    return b;
}

SavedBlock makeBlock(const MemoryTimeline& tl, const SavedSequence& seq, size_t first, size_t period)
{
    std::vector<uint32_t> allocs;
    for (size_t k = first; k < first + period; ++k)
        allocs.insert(allocs.end(), seq.items[k].begin(), seq.items[k].end());
    return blockOf(tl, std::move(allocs));
}

/// When the backward reaches block `b`: after the backward of everything the forward made later
/// has released its saved tensors, the last such release before the block's own first one.
int64_t recomputeEvent(const MemoryTimeline& tl, const SavedBlock& b, const std::vector<uint32_t>& saved)
{
    int64_t at = -1;
    for (uint32_t i : saved) {
        const Allocation& a = tl.allocations[i];
        if (a.start > b.forwardEnd && a.end != Allocation::kStillAlive && a.end <= b.firstFree)
            at = std::max<int64_t>(at, a.end);
    }
    return at >= 0 ? at : b.firstFree;
}

/// The most the block's forward held at once beyond what it had saved by its end: the live
/// bytes over its forward, less those alive before it and its saved tensors.
int64_t forwardTransient(const MemoryTimeline& tl, const SavedBlock& b)
{
    int64_t first = b.forwardEnd, saved = 0;
    for (uint32_t i : b.allocs) {
        first = std::min<int64_t>(first, tl.allocations[i].start);
        saved += tl.allocations[i].size;
    }
    const int64_t before = first > 0 ? tl.allocated[size_t(first - 1)] : tl.initialAllocated;
    int64_t most = 0;
    for (int64_t e = first; e <= b.forwardEnd && e < int64_t(tl.allocated.size()); ++e)
        most = std::max(most, tl.allocated[size_t(e)] - before);
    return std::max<int64_t>(0, most - saved);
}

/// The moves of one block: its saved tensors but the output freed when its forward ends, made
/// again when the backward reaches it.
void moveBlock(const MemoryTimeline& tl, const SavedBlock& b, const std::vector<uint32_t>& saved, CheckpointPlan& plan)
{
    if (b.firstFree == std::numeric_limits<int64_t>::max())
        return; // the history ends before its backward (an OOM cut it)
    const int64_t again = recomputeEvent(tl, b, saved);
    for (uint32_t i : b.allocs) {
        const Allocation& a = tl.allocations[i];
        if (i == b.output || a.end == Allocation::kStillAlive || a.start >= b.forwardEnd || a.end <= b.forwardEnd)
            continue;
        plan.moves.push_back({b.forwardEnd, i, true});
        // Made again at the recompute, or, when the recorded backward had already freed it by
        // then, at its own release (the two boundaries cancel).
        plan.moves.push_back({std::min<int64_t>(again, a.end), i, false});
    }
}

} // namespace

CheckpointPlan planCheckpointing(const MemoryTimeline& tl, const std::vector<uint32_t>& saved, int64_t from, int64_t to,
                                 const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                 const StringPool* strings)
{
    CheckpointPlan plan;
    std::vector<uint32_t> inIteration;
    for (uint32_t i : saved)
        if (tl.allocations[i].start >= from && tl.allocations[i].start <= to)
            inIteration.push_back(i);
    const SavedSequence seq = savedSequence(tl, inIteration);
    double covered = 0, total = 0;
    for (int64_t b : seq.bytes)
        total += double(b);
    auto add = [&](const SavedBlock& b) {
        moveBlock(tl, b, inIteration, plan);
        plan.recomputeTransient = std::max(plan.recomputeTransient, forwardTransient(tl, b));
        plan.largestOutput = std::max(plan.largestOutput, tl.allocations[b.output].size);
        ++plan.blocks;
        for (uint32_t i : b.allocs)
            covered += double(tl.allocations[i].size);
    };
    // The layers the recorder named are the evidence; without names, the stacks' repeats.
    ModuleBlocks named = strings ? moduleBlocks(tl, inIteration, tensors, *strings) : ModuleBlocks{};
    if (!named.blocks.empty()) {
        for (auto& allocs : named.blocks)
            add(blockOf(tl, std::move(allocs)));
        plan.runs = named.containers;
        plan.byModule = true;
    } else {
        for (const RepeatedBlocks& rb : findRepeatedRuns(seq.keys, seq.bytes)) {
            for (int k = 0; k < rb.count; ++k)
                add(makeBlock(tl, seq, size_t(rb.start + k * rb.period), size_t(rb.period)));
            ++plan.runs;
        }
    }
    plan.coverage = total > 0 ? covered / total : 0;
    std::stable_sort(plan.moves.begin(), plan.moves.end(), [](const CheckpointPlan::Move& x, const CheckpointPlan::Move& y) {
        return x.event != y.event ? x.event < y.event : x.end > y.end;
    });
    if (plan.moves.empty())
        return CheckpointPlan{};
    plan.from = from;
    plan.to = to;
    return plan;
}

} // namespace headroom
