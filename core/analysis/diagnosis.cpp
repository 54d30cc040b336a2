// SPDX-License-Identifier: MIT
#include "core/analysis/diagnosis.h"

#include "core/util/text.h"

#include "core/analysis/categorychecks.h"
#include "core/analysis/deviceimbalance.h"
#include "core/analysis/oomprogress.h"
#include "core/analysis/prerecordingfinding.h"

#include "core/util/units.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace headroom {

namespace {

/// The first move that turns expandable_segments on, or "" when it already is.
std::string expandableMove(SettingState s)
{
    switch (s) {
    case SettingState::Off: return "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
    case SettingState::Unknown: return "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if it is not already on";
    case SettingState::On: break;
    }
    return {};
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

/// "misses by 6.0%: a small miss" and its kin, for a need known exactly.
void judgeRatio(Finding& f, double ratio, int64_t spare, SettingState expandable)
{
    if (ratio <= 0.9) {
        f.verdict = "fits with " + formatBytes(spare) + " of headroom";
        f.firstMove = "nothing needed; the headroom allows a larger micro-batch";
    } else if (ratio <= 1.0) {
        f.verdict = "fits, but within 10% of capacity";
        f.firstMove = expandable == SettingState::On ? "keep a margin: trim the micro-batch slightly"
                      : expandable == SettingState::Off
                          ? "keep a margin: enable expandable_segments or trim the micro-batch slightly"
                          : "keep a margin: enable expandable_segments (if not already on) or trim the micro-batch "
                            "slightly";
    } else if (ratio <= 1.1) {
        f.verdict = "misses by " + formatPercent(ratio - 1.0) + ": a small miss";
        f.firstMove = "a cheap lever is enough: a smaller micro-batch with more gradient accumulation";
        if (expandable == SettingState::Off)
            f.firstMove += ", or expandable_segments to recover fragmentation";
        else if (expandable == SettingState::Unknown)
            f.firstMove += ", or expandable_segments (if not already on) to recover fragmentation";
    } else if (ratio <= 1.5) {
        f.verdict = "misses by " + formatPercent(ratio - 1.0) + ": needs a structural lever";
        f.firstMove = "activation checkpointing for activations, an 8-bit or sharded optimizer for optimizer "
                      "state; see which category dominates the peak";
    } else {
        f.verdict = "misses by " + formatTimes(ratio) + ": a large miss";
        f.firstMove = "shard the model and optimizer state (ZeRO/FSDP) or offload; tuning alone will not fit it";
    }
}

/// Where the OOM stopped the step, in words: "the OOM stopped the forward after 72 of the 144
/// allocations from model.py:174:forward that device 0's forward made".
std::string progressText(const OomProgress& p, const FrameTable& frames)
{
    std::string s = "the OOM stopped the " + std::string(phaseKey(p.phase));
    if (p.line == 0 || p.done == 0)
        return s;
    const std::string line = frames.formatFrame(p.line);
    if (p.of > 0)
        return s + " after " + std::to_string(p.done) + " of the " + std::to_string(p.of) + " allocations from " +
               line + " that " + p.reference + "'s " + std::string(phaseKey(p.phase)) + " made (" +
               formatPercent(double(p.done) / double(p.of)) + " of the way)";
    return s + " after " + std::to_string(p.done) + " allocations from " + line;
}

/// An OOM's need is a lower bound: estimated from a complete reference when the file has one,
/// else judged as "at least".
void judgeOom(Finding& f, const OomProgress& p, const FrameTable& frames, const CapacityEstimate& cap,
              SettingState expandable)
{
    const std::string where = progressText(p, frames);
    const double low = double(p.lowerBound) / double(cap.bytes);
    if (p.estimateLow > 0) {
        const double eLow = double(p.estimateLow) / double(cap.bytes);
        const double eHigh = double(p.estimateHigh) / double(cap.bytes);
        judgeRatio(f, eHigh, cap.bytes - p.estimateHigh, expandable);
        Finding structural;
        judgeRatio(structural, eLow, cap.bytes - p.estimateLow, expandable);
        const char* reading = eLow > 1.0 ? "misses" : eHigh > 1.0 ? "may miss" : "fits at this capacity";
        const std::string need = "the whole step needs an estimated " + formatBytes(p.estimateLow) + " to " +
                                 formatBytes(p.estimateHigh) + " allocated (" + formatPercent(eLow) + " to " + formatPercent(eHigh) +
                                 " of capacity, from " + p.reference + ")";
        f.verdict = std::string(reading) + ": " + need;
        // The evidence keeps where the OOM stopped, also when a projection words the verdict.
        f.evidence += "; " + need + "; " + where;
        if (structural.firstMove != f.firstMove)
            f.firstMove = "at the low estimate: " + structural.firstMove + "; at the high: " + f.firstMove;
        return;
    }
    f.verdict = (low > 1.0 ? "misses by at least " + formatPercent(low - 1.0)
                           : "misses: the step had reached " + formatPercent(low) + " of capacity when a request failed") +
                " (what was alive at the OOM is a lower bound; the whole step's need is not recorded)";
    f.evidence += "; " + where;
    f.firstMove = "record a run that fits (smaller micro-batch) to measure the full step, then scale it; "
                  "check the fragmentation finding first";
}

Finding capacityFinding(const MemoryTimeline& tl, const FrameTable& frames, const DeviceAnalysis& a,
                        const CapacityEstimate& cap, SettingState expandable, const std::optional<OomProgress>& oom)
{
    Finding f;
    f.kind = "capacity";
    int64_t need = tl.peakAllocated;
    std::string needText = "peak allocated " + formatBytes(need);
    if (oom) {
        need = std::max(need, oom->lowerBound);
        needText = "allocated at the OOM + the failing request " + formatBytes(oom->lowerBound) + " (a lower bound)";
        if (oom->estimateLow > 0)
            needText += "; the rest of " + oom->reference + "'s step added as it was: " +
                        formatBytes(oom->estimateLow) + ", scaled by what this device held at the same point: " +
                        formatBytes(oom->estimateHigh);
    }
    if (cap.bytes <= 0) {
        f.verdict = "capacity unknown";
        f.evidence = needText + "; no OOM record and no capacity given";
        f.firstMove = "give the device capacity (Preferences, or --capacity 80GiB on the command line) to judge "
                      "how far the peak is from it";
        return f;
    }
    const double ratio = double(need) / double(cap.bytes);
    // One number per clause: the share is named with the figure it is of, not left after
    // the last size the need's text mentions (issue 49).
    const std::string measured = need == tl.peakAllocated ? "the peak allocated" : "the lower bound";
    f.evidence = needText + "; capacity " + formatBytes(cap.bytes) + " (" + cap.source + "): " + measured + " " +
                 formatBytes(need) + " is " + formatPercent(ratio) + " of it; at the peak: " + topCategories(a.atPeak, 3);
    if (oom)
        judgeOom(f, *oom, frames, cap, expandable);
    else
        judgeRatio(f, ratio, cap.bytes - need, expandable);
    return f;
}

std::optional<Finding> imbalanceFinding(const LoadedTrace& trace, size_t deviceIndex)
{
    const std::optional<LineImbalance> im = findDeviceImbalance(trace, deviceIndex);
    if (!im)
        return std::nullopt;
    Finding f;
    f.kind = "imbalance";
    f.verdict = "device " + std::to_string(im->index) + " allocates " + formatTimes(im->ratio) +
                " the other devices from the same line: its inputs are larger, not its capacity smaller";
    const std::string line = trace.snapshot.frames.formatFrame(im->frame);
    f.evidence = line + " allocates";
    for (size_t k = 0; k < im->perIndex.size(); ++k)
        f.evidence += (k == 0 ? " " : ", ") + formatBytes(im->perIndex[k].second) + " on device " +
                      std::to_string(im->perIndex[k].first);
    f.evidence += " (its largest single allocation on each)";
    f.firstMove = "bound each batch by a token (or size) budget, or split the inputs evenly across the devices, "
                  "before any capacity lever";
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

std::optional<Finding> outlierFinding(const FrameTable& frames, const TraceEvents& events, const DeviceAnalysis& a)
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
                formatTimes(static_cast<double>(it[worst].peakBytes) / static_cast<double>(median)) +
                " above the median of the others";
    f.evidence = "peak " + formatBytes(it[worst].peakBytes) + " at event " + std::to_string(it[worst].peakEvent) +
                 " against a median of " + formatBytes(median) + " over " + std::to_string(it.size() - 1) +
                 " other iterations; difference " + formatBytes(it[worst].peakBytes - median);
    // Which code's tensors grew with the batch: the same line in the other iterations.
    if (const auto line = findIterationOutlierLine(frames, events, a.phases.iterations, it[worst].iteration,
                                                   it[worst].peakBytes))
        f.evidence += "; " + frames.formatFrame(line->frame) + " allocates " + formatBytes(line->bytes) +
                      " in iteration " + std::to_string(line->index) + " against a median of " +
                      formatBytes(line->median) + " in the others (" + formatTimes(line->ratio) + ")";
    f.firstMove = "bound each batch by a token (or pixel) budget instead of a sample count, before any other lever";
    return f;
}

std::optional<Finding> fragmentationFinding(const FragmentationJudgement& j, const Fragmentation& atEnd)
{
    if (j.reserved <= 0)
        return std::nullopt;
    const std::string when = j.moment == "oom"    ? "at the OOM"
                             : j.moment == "peak" ? "at the peak"
                                                  : "in the final state";
    Finding f;
    f.kind = "fragmentation";
    if (j.moment == "oom")
        f.evidence = "just before the failing request (event " + std::to_string(j.eventIndex + 1) + ")";
    else if (j.moment == "peak")
        f.evidence = "at the allocated peak (" +
                     (j.eventIndex < 0 ? std::string("before the first event")
                                       : "event " + std::to_string(j.eventIndex)) + ")";
    else
        f.evidence = "in the final state (the file has no allocation history)";
    f.evidence += ": reserved " + formatBytes(j.reserved) + ", allocated " + formatBytes(j.allocated) +
                  ", cached free " + formatBytes(j.inactiveBytes) + " (" + formatPercent(j.unallocatedShare) + ") in " +
                  std::to_string(j.inactiveBlocks) + " blocks (largest " + formatBytes(j.largestFreeBlock) +
                  "), rounding " + formatBytes(j.internalBytes);
    const int64_t request = allocatorRoundSize(j.request);
    if (j.moment == "oom") {
        f.evidence += "; failing request " + formatBytes(j.request) + ", device free " + formatBytes(j.deviceFree) +
                      ": " + formatBytes(j.unusableForRequest) + " of the cached free lay in blocks too small for it";
        if (j.largestFreeBlock >= request)
            f.evidence += ", though one cached block could hold it (another stream or pool)";
    }
    // What the allocator view shows after the trace, often a step's freed activations or the
    // cache emptied after a caught OOM: context, not the verdict.
    if (j.moment != "end" && atEnd.reserved > 0)
        f.evidence += "; at the end of the trace: reserved " + formatBytes(atEnd.reserved) + ", cached free " +
                      formatBytes(atEnd.inactiveBytes) + " (" +
                      formatPercent(static_cast<double>(atEnd.inactiveBytes) / static_cast<double>(atEnd.reserved)) +
                      ")";
    const std::string alreadyOn = "expandable_segments is already on: ";
    if (j.moment == "oom" && j.largestFreeBlock < request) {
        const bool caused = j.inactiveBytes >= request;
        // Before reporting an OOM the allocator frees every wholly free segment, so what stays cached
        // lies in partly used ones and cannot go back to the device; with it the request would
        // have fit. Expandable segments unmap those free pages too, so with them on it is not so.
        const bool tipped = !caused && j.expandable != SettingState::On && j.inactiveBytes > 0 &&
                            j.inactiveBytes + j.deviceFree >= request;
        if (caused || tipped) {
            f.verdict = caused ? "fragmentation caused the OOM: enough memory was cached (" +
                                     formatBytes(j.inactiveBytes) + ") but no free block could hold the request"
                               : "fragmentation tipped the OOM: the cached free " + formatBytes(j.inactiveBytes) +
                                     " and the device's free " + formatBytes(j.deviceFree) +
                                     " would together have held the request, but the cache could not return it";
            f.firstMove = j.expandable == SettingState::On
                              ? alreadyOn + "allocate the large buffers once and reuse them, or give large tensors "
                                            "fewer distinct sizes (pad or bucket the shapes)"
                              : expandableMove(j.expandable);
            return f;
        }
    }
    if (j.unallocatedShare > 0.3) {
        f.verdict =
            formatPercent(j.unallocatedShare) + " of reserved memory was cached free " + when + ": high fragmentation";
        const std::string shapes = "avoid many differently sized large allocations";
        f.firstMove = j.expandable == SettingState::On ? alreadyOn + shapes
                                                       : expandableMove(j.expandable) + ", or " + shapes;
        if (j.moment == "end") {
            f.verdict += " if the peak looked the same";
            f.firstMove = "record the allocation history (torch.cuda.memory._record_memory_history) to judge it at "
                          "the peak; if it holds there, " + f.firstMove;
        }
    } else {
        f.verdict = "fragmentation is low " + when + " (" + formatPercent(j.unallocatedShare) +
                    " of reserved memory cached free)";
        f.firstMove = "none needed for fragmentation";
    }
    return f;
}

std::optional<Finding> oomFinding(const MemoryTimeline& tl, const DeviceData& dev, const FrameTable& frames,
                                  const FragmentationJudgement& j)
{
    if (dev.ooms.empty())
        return std::nullopt;
    const OomEvent& o = dev.ooms.front();
    const int64_t held = reservedAt(tl, o.eventIndex);
    const int64_t allocated = tl.allocatedBefore(o.eventIndex);
    Finding f;
    f.kind = "oom";
    f.verdict = "a request of " + formatBytes(o.size) + " failed with " + formatBytes(o.deviceFree) +
                " free on the device";
    f.evidence = "the process held " + formatBytes(held) + " reserved (" + formatBytes(allocated) +
                 " allocated) at event " + std::to_string(o.eventIndex) + "; the request is " +
                 formatTimes(o.deviceFree > 0 ? static_cast<double>(o.size) / static_cast<double>(o.deviceFree) : 0.0) +
                 " the free memory";
    const std::vector<std::string> code = frames.topFrameLines(dev.oomStack(o), 1);
    f.evidence += code.empty() ? "; the OOM record carries no frames" : "; requested by " + code.front();
    const bool cacheHeldEnough = j.moment == "oom" ? j.inactiveBytes >= o.size : held - allocated >= o.size;
    if (!cacheHeldEnough)
        f.firstMove = "reduce what is alive at this point: see the breakdown at the OOM";
    else if (j.expandable == SettingState::On)
        f.firstMove = "the cache held enough but in pieces, with expandable_segments already on: see the "
                      "fragmentation finding";
    else
        f.firstMove = "the cache held enough: try expandable_segments" +
                      std::string(j.expandable == SettingState::Unknown ? " (if not already on)" : "") +
                      " before shrinking the workload";
    return f;
}

std::string invariantText(const CategoryInvariant& i)
{
    const std::string at = i.event >= 0 ? "at the peak" : "at the end of the trace";
    switch (i.kind) {
    case CategoryInvariant::Kind::OptimizerStateRatio:
        return "optimizer state " + formatBytes(i.bytes) + " is " + formatTimes(i.ratio) + " the parameters' " +
               formatBytes(i.reference) + " " + at + " (Adam keeps 2x, with an fp32 master copy 3x)";
    case CategoryInvariant::Kind::GradientRatio:
        return "gradients " + formatBytes(i.bytes) + " are " + formatTimes(i.ratio) + " the parameters' " +
               formatBytes(i.reference) + " " + at + " (one accumulation buffer holds at most 2x)";
    case CategoryInvariant::Kind::BreakdownTotal:
        return "the categories add up to " + formatBytes(i.bytes) + " where the allocated curve is " +
               formatBytes(i.reference) + " " + at;
    }
    return {};
}

std::optional<Finding> categoryFinding(const MemoryTimeline& tl, const DeviceAnalysis& a)
{
    const std::vector<CategoryInvariant> broken = brokenCategoryInvariants(tl, a);
    if (broken.empty())
        return std::nullopt;
    Finding f;
    f.kind = "categories";
    f.verdict = "the categories break what a training step can hold: read them, and the levers built on them, "
                "with care";
    for (const CategoryInvariant& i : broken)
        f.evidence += (f.evidence.empty() ? "" : "; ") + invariantText(i);
    f.evidence += "; phases from " + a.phases.iterationSource;
    f.firstMove = optimizerStateSuspect(broken)
                      ? "check the failing request's frames and the phases before shrinking optimizer state: a "
                        "forward run inside optimizer.step(closure) or a model built inside the step reads as "
                        "optimizer state; a recording with phase markers (python/headroom_record.py) settles it"
                      : "check the phases and the stacks of the largest allocations; a recording with phase "
                        "markers (python/headroom_record.py) settles it";
    return f;
}

} // namespace

const char* settingStateName(SettingState s)
{
    switch (s) {
    case SettingState::Off: return "off";
    case SettingState::On: return "on";
    case SettingState::Unknown: break;
    }
    return "unknown";
}

SettingState expandableSegments(const Snapshot& snap, const DeviceData& dev)
{
    std::optional<bool> key, conf;
    for (const auto& [k, v] : snap.allocatorSettings) {
        if (k == "expandable_segments") {
            key = truthy(v);
            continue;
        }
        // PYTORCH_CUDA_ALLOC_CONF as the user wrote it: "expandable_segments:True,max_split_size_mb:128".
        static constexpr std::string_view kOption = "expandable_segments:";
        if (const size_t at = v.find(kOption); at != std::string::npos) {
            const size_t from = at + kOption.size();
            conf = truthy(v.substr(from, v.find(',', from) - from));
        }
    }
    if (key.value_or(conf.value_or(false)))
        return SettingState::On;
    // Mapped ranges exist only with expandable segments, whatever the settings say.
    for (const Segment& s : dev.segments)
        if (s.expandable)
            return SettingState::On;
    for (TraceAction a : dev.trace.action)
        if (a == TraceAction::SegmentMap || a == TraceAction::SegmentUnmap)
            return SettingState::On;
    return key || conf ? SettingState::Off : SettingState::Unknown;
}

FragmentationJudgement judgeFragmentation(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a)
{
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    FragmentationJudgement j;
    j.expandable = expandableSegments(trace.snapshot, dev);
    const bool history = std::any_of(tl.allocations.begin(), tl.allocations.end(), [](const Allocation& al) {
        return al.start != Allocation::kBeforeWindow || al.end != Allocation::kStillAlive;
    });
    AllocatorState st;
    if (!dev.ooms.empty()) {
        const OomEvent& o = dev.ooms.front();
        j.moment = "oom";
        j.eventIndex = std::max<int64_t>(-1, o.eventIndex - 1); // the cache the failing request met
        j.request = o.size;
        j.deviceFree = o.deviceFree;
        st = a.allocator.stateAt(tl, j.eventIndex);
    } else if (history) {
        j.moment = "peak";
        j.eventIndex = tl.peakEventIndex;
        st = a.allocator.stateAt(tl, j.eventIndex);
    } else {
        j.moment = "end";
        j.eventIndex = static_cast<int64_t>(dev.trace.count()) - 1;
        st = recordedAllocatorState(dev);
    }
    j.reserved = st.reserved;
    j.allocated = st.allocated;
    j.internalBytes = st.internal;
    // An expandable segment grows by mapped ranges that are contiguous in its address space, and
    // the state cuts each block at its range's end. So an allocation straddling a boundary
    // reads as a free block at the start of the next range, and a free run crossing one as two
    // blocks; to the allocator both are one block.
    const bool expandable = j.expandable == SettingState::On;
    std::vector<int64_t> runs;
    bool open = false;
    uint64_t runEnd = 0, coveredTo = 0;
    for (const StateBlock& b : st.blocks) { // by segment address, then by address
        const uint64_t end = b.address + static_cast<uint64_t>(b.size);
        if (b.state != BlockState::Inactive) {
            open = false;
            coveredTo = std::max(end, b.address + static_cast<uint64_t>(allocatorRoundSize(b.requested)));
            continue;
        }
        const uint64_t from = expandable ? std::max(b.address, coveredTo) : b.address;
        if (from >= end)
            continue;
        const auto size = static_cast<int64_t>(end - from);
        if (expandable && open && from == runEnd)
            runs.back() += size;
        else
            runs.push_back(size);
        open = true;
        runEnd = end;
    }
    j.inactiveBlocks = static_cast<int64_t>(runs.size());
    const int64_t request = allocatorRoundSize(j.request);
    for (int64_t r : runs) {
        j.inactiveBytes += r;
        j.largestFreeBlock = std::max(j.largestFreeBlock, r);
        if (j.moment == "oom" && r < request)
            j.unusableForRequest += r;
    }
    j.unallocatedShare = j.reserved > 0 ? static_cast<double>(j.inactiveBytes) / static_cast<double>(j.reserved) : 0.0;
    return j;
}

CapacityEstimate estimateCapacity(const LoadedTrace& trace, size_t deviceIndex, std::optional<int64_t> user)
{
    if (user && *user > 0)
        return {*user, "user"};
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    if (!dev.ooms.empty()) {
        const OomEvent& o = dev.ooms.front();
        // A trace without segment events has no reserved curve: what was allocated was on the
        // device at least.
        const int64_t held = std::max(reservedAt(tl, o.eventIndex), tl.allocatedBefore(o.eventIndex));
        return {held + o.deviceFree, "OOM record: reserved + device free"};
    }
    // The device a recording without one was made for (a CPU or fake-tensor recording's
    // target: headroom_cpu's target_device).
    for (const auto& [key, value] : trace.snapshot.runConfig)
        if (key == "target_capacity_bytes") {
            char* end = nullptr;
            const long long bytes = std::strtoll(value.c_str(), &end, 10);
            if (end && *end == '\0' && bytes > 0)
                return {int64_t(bytes), "the file's target device (headroom_config)"};
        }
    return {0, "unknown"};
}

std::vector<Finding> diagnose(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                              const CapacityEstimate& cap)
{
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    const FragmentationJudgement frag = judgeFragmentation(trace, deviceIndex, a);
    std::vector<Finding> out;
    if (auto f = oomFinding(tl, dev, trace.snapshot.frames, frag))
        out.push_back(*f);
    if (auto f = imbalanceFinding(trace, deviceIndex))
        out.push_back(*f);
    out.push_back(capacityFinding(tl, trace.snapshot.frames, a, cap, frag.expandable,
                                  oomProgress(trace, deviceIndex, a)));
    if (auto f = leakFinding(tl, a))
        out.push_back(*f);
    // A CPU recording holds no allocator's segments: its "reserved" is not the run's, and a
    // fragmentation reading from it would contradict the allocated peak beside it.
    if (auto f = tl.reservedRecorded ? fragmentationFinding(frag, a.fragmentation) : std::nullopt)
        out.push_back(*f);
    if (auto f = outlierFinding(trace.snapshot.frames, dev.trace, a))
        out.push_back(*f);
    if (auto f = categoryFinding(tl, a))
        out.push_back(*f);
    if (auto f = preRecordingFinding(a.preRecording))
        out.push_back(*f);
    return out;
}

} // namespace headroom
