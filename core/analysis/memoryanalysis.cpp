// SPDX-License-Identifier: MIT
#include "core/analysis/memoryanalysis.h"

#include "core/analysis/timelinebands.h"

#include "core/util/loaderror.h"

#include <algorithm>
#include <future>
#include <unordered_map>

namespace headroom {

namespace {

Fragmentation fragmentationOf(const DeviceData& dev)
{
    Fragmentation f;
    for (const Segment& s : dev.segments)
        f.reserved += s.totalSize;
    for (const Block& b : dev.blocks) {
        switch (b.state) {
        case BlockState::ActiveAllocated:
            f.allocated += b.size;
            f.requested += b.requestedSize;
            f.internalBytes += std::max<int64_t>(0, b.size - b.requestedSize);
            break;
        case BlockState::ActivePendingFree:
            f.pendingFreeBytes += b.size;
            break;
        case BlockState::Inactive:
            f.inactiveBytes += b.size;
            f.largestFreeBlock = std::max(f.largestFreeBlock, b.size);
            ++f.inactiveBlocks;
            break;
        case BlockState::Unknown:
            break;
        }
    }
    return f;
}

} // namespace

std::vector<size_t> DeviceAnalysis::liveAt(const MemoryTimeline& tl, int64_t event) const
{
    const std::vector<uint32_t> live = allocator.liveIndex().liveAfter(tl, event);
    return {live.begin(), live.end()};
}

Breakdown DeviceAnalysis::breakdownAt(const MemoryTimeline& tl, int64_t event) const
{
    Breakdown b;
    for (uint32_t i : allocator.liveIndex().liveAfter(tl, event)) {
        const Allocation& a = tl.allocations[i];
        const AllocationClass& c = classes[i];
        const auto ci = static_cast<size_t>(c.category);
        const auto pi = static_cast<size_t>(c.birthPhase);
        b.byCategory[ci] += a.size;
        b.byPhase[pi] += a.size;
        b.matrix[ci][pi] += a.size;
        b.total += a.size;
        ++b.count;
    }
    return b;
}

std::vector<size_t> DeviceAnalysis::largestAt(const MemoryTimeline& tl, int64_t event, size_t count) const
{
    std::vector<size_t> live = liveAt(tl, event);
    const size_t k = std::min(count, live.size());
    std::partial_sort(live.begin(), live.begin() + static_cast<ptrdiff_t>(k), live.end(), [&](size_t x, size_t y) {
        return tl.allocations[x].size != tl.allocations[y].size ? tl.allocations[x].size > tl.allocations[y].size
                                                                 : x < y;
    });
    live.resize(k);
    return live;
}

std::vector<StackNode> DeviceAnalysis::stackTreeAt(const MemoryTimeline& tl, const FrameTable& ft, int64_t event,
                                                   bool pythonOnly, const std::function<bool(size_t)>& keep) const
{
    std::vector<StackNode> nodes(1); // the root
    std::unordered_map<uint64_t, int32_t> child; // (parent << 32 | frame) -> node
    std::unordered_map<uint32_t, std::vector<uint32_t>> shown; // by stack id: a few thousand stacks
    for (uint32_t i : allocator.liveIndex().liveAfter(tl, event)) {
        if (keep && !keep(i))
            continue;
        const Allocation& a = tl.allocations[i];
        nodes[0].bytes += a.size;
        ++nodes[0].count;
        auto s = shown.find(a.stack);
        if (s == shown.end())
            s = shown.emplace(a.stack, shownFrames(ft, a.stack, pythonOnly)).first;
        int32_t at = 0;
        for (uint32_t frame : s->second) { // outermost first
            const uint64_t key = (uint64_t(uint32_t(at)) << 32) | frame;
            auto [it, inserted] = child.try_emplace(key, static_cast<int32_t>(nodes.size()));
            if (inserted)
                nodes.push_back({frame, at, 0, 0});
            at = it->second;
            nodes[at].bytes += a.size;
            ++nodes[at].count;
        }
    }
    return nodes;
}

DeviceAnalysis analyzeDevice(const LoadedTrace& trace, size_t deviceIndex, const AnalysisOptions& options)
{
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    DeviceAnalysis a;
    a.device = dev.device;
    // On a million events the history is a third of the analysis and the category series
    // another; with the history on a second core the first paint comes that much sooner.
    std::future<AllocatorHistory> history =
        std::async(std::launch::async, [&dev, &tl] { return AllocatorHistory(dev, tl); });
    a.phases = PhaseClassifier::classify(trace.snapshot, dev);
    throwIfCancelled(options.cancel);
    a.classes = CategoryClassifier::classify(trace.snapshot, dev, tl, a.phases);
    a.preRecording = readPreRecording(trace.snapshot.frames, tl, a.phases, a.classes, dev.trace.tensors);
    throwIfCancelled(options.cancel);
    if (options.categorySeries)
        a.categories = categorySeries(tl, a.classes);
    a.allocator = history.get();
    throwIfCancelled(options.cancel);
    const int64_t n = static_cast<int64_t>(dev.trace.count());
    for (const Iteration& it : a.phases.iterations) {
        IterationPeak p;
        p.iteration = it.index;
        p.startEvent = it.startEvent;
        p.endEvent = it.endEvent;
        for (int64_t i = it.startEvent; i <= it.endEvent; ++i)
            if (tl.allocated[i] > p.peakBytes || p.peakEvent < 0) {
                p.peakBytes = tl.allocated[i];
                p.peakEvent = i;
            }
        p.endBytes = tl.allocated[it.endEvent];
        a.iterationPeaks.push_back(p);
    }
    a.atPeak = a.breakdownAt(tl, tl.peakEventIndex);
    a.atEnd = a.breakdownAt(tl, n > 0 ? n - 1 : -1);
    a.topAtPeak = a.largestAt(tl, tl.peakEventIndex, 10);
    a.fragmentation = fragmentationOf(dev);
    return a;
}

} // namespace headroom
