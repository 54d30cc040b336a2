// SPDX-License-Identifier: MIT
#include "core/diagnosis.h"

#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace headroom {

namespace {

std::string percent(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", x * 100.0);
    return buf;
}

std::string times(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x);
    return buf;
}

/// Allocated bytes just before an event (what the process held when it was issued).
int64_t allocatedBefore(const MemoryTimeline& tl, int64_t event)
{
    return event > 0 && static_cast<size_t>(event) <= tl.allocated.size() ? tl.allocated[event - 1]
                                                                          : tl.initialAllocated;
}

int64_t reservedAt(const MemoryTimeline& tl, int64_t event)
{
    return event >= 0 && static_cast<size_t>(event) < tl.reserved.size() ? tl.reserved[event] : tl.initialReserved;
}

std::string topCategories(const Breakdown& b, size_t count)
{
    std::vector<size_t> idx(static_cast<size_t>(kTensorCategoryCount));
    for (size_t i = 0; i < idx.size(); ++i)
        idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return b.byCategory[x] > b.byCategory[y]; });
    std::string s;
    for (size_t k = 0; k < count && k < idx.size(); ++k) {
        if (b.byCategory[idx[k]] <= 0)
            break;
        s += (s.empty() ? "" : ", ") + std::string(categoryLowerName(static_cast<TensorCategory>(idx[k]))) + " " +
             formatBytes(b.byCategory[idx[k]]);
    }
    return s;
}

Finding capacityFinding(const MemoryTimeline& tl, const DeviceData& dev, const DeviceAnalysis& a,
                        const CapacityEstimate& cap)
{
    Finding f;
    f.kind = "capacity";
    int64_t need = tl.peakAllocated;
    std::string needText = "peak allocated " + formatBytes(need);
    if (!dev.ooms.empty()) {
        const OomEvent& o = dev.ooms.front();
        const int64_t held = allocatedBefore(tl, o.eventIndex);
        need = std::max(need, held + o.size);
        needText = "allocated at the OOM " + formatBytes(held) + " + failing request " + formatBytes(o.size);
    }
    if (cap.bytes <= 0) {
        f.verdict = "capacity unknown";
        f.evidence = needText + "; no OOM record and no capacity given";
        f.firstMove = "pass the device capacity (--capacity 80GiB) to judge how far the peak is from it";
        return f;
    }
    const double ratio = static_cast<double>(need) / static_cast<double>(cap.bytes);
    if (!dev.ooms.empty() && ratio <= 1.0) {
        // It ran out, so it did not fit; how much more the whole step needs is not recorded.
        f.verdict = "misses: the step had reached " + percent(ratio) + " of capacity when a request failed; "
                    "its full need is higher and not recorded";
        f.evidence = needText + " against a capacity of " + formatBytes(cap.bytes) + " (" + cap.source +
                     "); at the peak: " + topCategories(a.atPeak, 3);
        f.firstMove = "record a run that fits (smaller micro-batch) to measure the full step, then scale it; "
                      "check the fragmentation finding first";
        return f;
    }
    f.evidence = needText + " against a capacity of " + formatBytes(cap.bytes) + " (" + cap.source + "): " +
                 percent(ratio) + " of capacity; at the peak: " + topCategories(a.atPeak, 3);
    if (ratio <= 0.9) {
        f.verdict = "fits with " + formatBytes(cap.bytes - need) + " of headroom";
        f.firstMove = "nothing needed; the headroom allows a larger micro-batch";
    } else if (ratio <= 1.0) {
        f.verdict = "fits, but within 10% of capacity";
        f.firstMove = "keep a margin: enable expandable_segments or trim the micro-batch slightly";
    } else if (ratio <= 1.1) {
        f.verdict = "misses by " + percent(ratio - 1.0) + ": a small miss";
        f.firstMove = "a cheap lever is enough: a smaller micro-batch with more gradient accumulation, or "
                      "expandable_segments to recover fragmentation";
    } else if (ratio <= 1.5) {
        f.verdict = "misses by " + percent(ratio - 1.0) + ": needs a structural lever";
        f.firstMove = "activation checkpointing for activations, an 8-bit or sharded optimizer for optimizer "
                      "state; see which category dominates the peak";
    } else {
        f.verdict = "misses by " + times(ratio) + ": a large miss";
        f.firstMove = "shard the model and optimizer state (ZeRO/FSDP) or offload; tuning alone will not fit it";
    }
    return f;
}

std::optional<Finding> leakFinding(const MemoryTimeline& tl, const DeviceAnalysis& a)
{
    const auto& it = a.iterationPeaks;
    if (it.size() < 3)
        return std::nullopt;
    // Skip the first iteration: it creates optimizer state.
    const int64_t first = it[1].endBytes;
    const int64_t last = it.back().endBytes;
    // The median step-to-step change is robust to one odd iteration (e.g. a partial last one).
    std::vector<int64_t> deltas;
    int rising = 0;
    for (size_t k = 2; k < it.size(); ++k) {
        deltas.push_back(it[k].endBytes - it[k - 1].endBytes);
        rising += it[k].endBytes > it[k - 1].endBytes;
    }
    std::nth_element(deltas.begin(), deltas.begin() + static_cast<ptrdiff_t>(deltas.size() / 2), deltas.end());
    const double growth = static_cast<double>(deltas[deltas.size() / 2]);
    const bool consistent = rising * 4 >= static_cast<int>(it.size() - 2) * 3;
    if (growth < std::max(1.0 * (1 << 20), 0.005 * static_cast<double>(first)) || !consistent)
        return std::nullopt;
    // Allocations born after the first iteration and still alive at the end.
    int64_t accumulated = 0, count = 0;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& al = tl.allocations[i];
        if (al.end == Allocation::kStillAlive && al.start > it[0].endEvent) {
            accumulated += al.size;
            ++count;
        }
    }
    Finding f;
    f.kind = "leak";
    f.verdict = "memory grows by " + formatBytes(static_cast<int64_t>(growth)) + " per iteration";
    f.evidence = "the baseline after each iteration rose from " + formatBytes(first) + " to " + formatBytes(last) +
                 " over " + std::to_string(it.size() - 2) + " iterations (" + std::to_string(rising) +
                 " rises); " + std::to_string(count) + " allocations born after the first iteration are still "
                 "alive, " + formatBytes(accumulated);
    f.firstMove = "find what keeps references across steps (losses or outputs appended to a list without "
                  ".item()/.detach(), caches); the stacks of the still-alive allocations show where they come from";
    return f;
}

std::optional<Finding> outlierFinding(const DeviceAnalysis& a)
{
    const auto& it = a.iterationPeaks;
    if (it.size() < 3)
        return std::nullopt;
    size_t worst = 0;
    for (size_t k = 1; k < it.size(); ++k)
        if (it[k].peakBytes > it[worst].peakBytes)
            worst = k;
    std::vector<int64_t> others;
    for (size_t k = 0; k < it.size(); ++k)
        if (k != worst)
            others.push_back(it[k].peakBytes);
    std::nth_element(others.begin(), others.begin() + static_cast<ptrdiff_t>(others.size() / 2), others.end());
    const int64_t median = others[others.size() / 2];
    if (median <= 0 || static_cast<double>(it[worst].peakBytes) < 1.2 * static_cast<double>(median))
        return std::nullopt;
    Finding f;
    f.kind = "outlier_batch";
    f.verdict = "iteration " + std::to_string(it[worst].iteration) + " peaks " +
                times(static_cast<double>(it[worst].peakBytes) / static_cast<double>(median)) +
                " above the median of the others";
    f.evidence = "peak " + formatBytes(it[worst].peakBytes) + " at event " + std::to_string(it[worst].peakEvent) +
                 " against a median of " + formatBytes(median) + " over " + std::to_string(it.size() - 1) +
                 " other iterations; difference " + formatBytes(it[worst].peakBytes - median);
    f.firstMove = "bound each batch by a token (or pixel) budget instead of a sample count, before any other lever";
    return f;
}

std::optional<Finding> fragmentationFinding(const DeviceData& dev, const DeviceAnalysis& a)
{
    const Fragmentation& fr = a.fragmentation;
    if (fr.reserved <= 0)
        return std::nullopt;
    const int64_t cached = fr.reserved - fr.allocated;
    const double share = static_cast<double>(cached) / static_cast<double>(fr.reserved);
    Finding f;
    f.kind = "fragmentation";
    f.evidence = "reserved " + formatBytes(fr.reserved) + ", allocated " + formatBytes(fr.allocated) + ", cached free " +
                 formatBytes(fr.inactiveBytes) + " in " + std::to_string(fr.inactiveBlocks) +
                 " blocks (largest " + formatBytes(fr.largestFreeBlock) + "), rounding " +
                 formatBytes(fr.internalBytes);
    if (!dev.ooms.empty()) {
        const OomEvent& o = dev.ooms.front();
        if (o.size <= fr.inactiveBytes && o.size > fr.largestFreeBlock) {
            f.verdict = "fragmentation caused the OOM: enough memory was cached (" + formatBytes(fr.inactiveBytes) +
                        ") but no free block could hold the request";
            f.evidence += "; failing request " + formatBytes(o.size);
            f.firstMove = "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
            return f;
        }
        f.evidence += "; failing request " + formatBytes(o.size);
    }
    if (share > 0.3) {
        f.verdict = percent(share) + " of reserved memory is not allocated: high fragmentation";
        f.firstMove = "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or avoid many differently sized "
                      "large allocations";
    } else {
        f.verdict = "fragmentation is low (" + percent(share) + " of reserved memory unallocated)";
        f.firstMove = "none needed for fragmentation";
    }
    return f;
}

std::optional<Finding> oomFinding(const MemoryTimeline& tl, const DeviceData& dev)
{
    if (dev.ooms.empty())
        return std::nullopt;
    const OomEvent& o = dev.ooms.front();
    const int64_t held = reservedAt(tl, o.eventIndex);
    const int64_t allocated = allocatedBefore(tl, o.eventIndex);
    Finding f;
    f.kind = "oom";
    f.verdict = "a request of " + formatBytes(o.size) + " failed with " + formatBytes(o.deviceFree) +
                " free on the device";
    f.evidence = "the process held " + formatBytes(held) + " reserved (" + formatBytes(allocated) +
                 " allocated) at event " + std::to_string(o.eventIndex) + "; the request is " +
                 times(o.deviceFree > 0 ? static_cast<double>(o.size) / static_cast<double>(o.deviceFree) : 0.0) +
                 " the free memory";
    f.firstMove = held - allocated >= o.size
                      ? "the cache held enough: try expandable_segments before shrinking the workload"
                      : "reduce what is alive at this point: see the breakdown at the OOM";
    return f;
}

} // namespace

CapacityEstimate estimateCapacity(const LoadedTrace& trace, size_t deviceIndex, std::optional<int64_t> user)
{
    if (user && *user > 0)
        return {*user, "user"};
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    if (!dev.ooms.empty()) {
        const OomEvent& o = dev.ooms.front();
        return {reservedAt(tl, o.eventIndex) + o.deviceFree, "OOM record: reserved + device free"};
    }
    return {0, "unknown"};
}

std::vector<Finding> diagnose(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                              const CapacityEstimate& cap)
{
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    std::vector<Finding> out;
    if (auto f = oomFinding(tl, dev))
        out.push_back(*f);
    out.push_back(capacityFinding(tl, dev, a, cap));
    if (auto f = leakFinding(tl, a))
        out.push_back(*f);
    if (auto f = fragmentationFinding(dev, a))
        out.push_back(*f);
    if (auto f = outlierFinding(a))
        out.push_back(*f);
    return out;
}

} // namespace headroom
