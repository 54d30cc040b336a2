// SPDX-License-Identifier: MIT
#include "core/analysis/oomprogress.h"

#include <algorithm>
#include <unordered_map>

namespace headroom {

namespace {

/// The telling frame of an event's stack, or UINT32_MAX (cached per stack).
class LineOf {
public:
    explicit LineOf(const FrameTable& ft) : m_ft(ft) {}
    uint32_t operator()(uint32_t stack)
    {
        auto [it, fresh] = m_cache.try_emplace(stack, UINT32_MAX);
        if (fresh && stack != FrameTable::kEmptyStack) {
            const std::vector<uint32_t> top = m_ft.topFrames(stack, 1);
            if (!top.empty())
                it->second = top.front();
        }
        return it->second;
    }

private:
    const FrameTable& m_ft;
    std::unordered_map<uint32_t, uint32_t> m_cache;
};

/// The most frequent line of the allocs in [from, to), and how often it occurs.
std::pair<uint32_t, int64_t> dominantLine(const TraceEvents& ev, LineOf& lineOf, int64_t from, int64_t to)
{
    std::unordered_map<uint32_t, int64_t> counts;
    for (int64_t i = std::max<int64_t>(0, from); i < to; ++i)
        if (ev.action[size_t(i)] == TraceAction::Alloc)
            if (const uint32_t l = lineOf(ev.stack[size_t(i)]); l != UINT32_MAX)
                ++counts[l];
    std::pair<uint32_t, int64_t> best{UINT32_MAX, 0};
    for (const auto& [l, c] : counts)
        if (c > best.second || (c == best.second && l < best.first))
            best = {l, c};
    return best;
}

/// A complete run of `phase` to compare with: its span, the device's timeline and the peak of
/// what follows.
struct Reference {
    std::string name;
    const TraceEvents* events = nullptr;
    const MemoryTimeline* timeline = nullptr;
    int64_t from = 0, to = 0; ///< the phase's first span, [from, to)
    int64_t peak = 0;         ///< the allocated peak of the reference's step
};

std::optional<Reference> earlierIteration(const DeviceData& dev, const MemoryTimeline& tl, const DeviceAnalysis& a,
                                          int64_t oomEvent, Phase phase)
{
    const int k = a.phases.iterationOf(oomEvent);
    if (k < 1 || size_t(k) > a.iterationPeaks.size())
        return std::nullopt;
    const Iteration& it = a.phases.iterations[size_t(k - 1)];
    for (const PhaseSpan& s : a.phases.spans)
        if (s.phase == phase && s.startEvent >= it.startEvent && s.startEvent <= it.endEvent)
            return Reference{"iteration " + std::to_string(k - 1), &dev.trace, &tl, s.startEvent, s.endEvent + 1,
                             a.iterationPeaks[size_t(k - 1)].peakBytes};
    return std::nullopt;
}

std::optional<Reference> otherDevice(const LoadedTrace& trace, size_t deviceIndex, Phase phase)
{
    const Snapshot& snap = trace.snapshot;
    for (size_t d = 0; d < snap.devices.size(); ++d) {
        const DeviceData& dev = snap.devices[d];
        if (d == deviceIndex || !dev.ooms.empty() || dev.trace.count() == 0)
            continue;
        const PhaseAnalysis ph = PhaseClassifier::classify(snap, dev);
        for (const PhaseSpan& s : ph.spans)
            if (s.phase == phase)
                return Reference{"device " + std::to_string(dev.device), &dev.trace, &trace.timelines[d],
                                 s.startEvent, s.endEvent + 1, trace.timelines[d].peakAllocated};
    }
    return std::nullopt;
}

/// The event of the `n`-th alloc (1-based) of `line` in [from, to); -1 if there are fewer.
int64_t nthAlloc(const TraceEvents& ev, LineOf& lineOf, uint32_t line, int64_t n, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; ++i)
        if (ev.action[size_t(i)] == TraceAction::Alloc && lineOf(ev.stack[size_t(i)]) == line && --n == 0)
            return i;
    return -1;
}

/// The alloc after `from` that is the (k+1)-th of `line` in [from, to); -1 if none.
int64_t allocAfter(const TraceEvents& ev, LineOf& lineOf, uint32_t line, int64_t k, int64_t from, int64_t to)
{
    for (int64_t i = from + 1; i < to; ++i)
        if (ev.action[size_t(i)] == TraceAction::Alloc && lineOf(ev.stack[size_t(i)]) == line && k-- == 0)
            return i;
    return -1;
}

/// Where the cut device was when its request failed, for aligning a reference with it.
struct CutPoint {
    int64_t phaseStart = 0;   ///< the stopped phase's first event
    int64_t dominant = 0;     ///< the event of the last counted alloc of the dominant line
    uint32_t failLine = 0;    ///< the failing request's line
    int64_t failAfter = 0;    ///< its allocs between `dominant` and the OOM
    int64_t base = 0;         ///< allocated when the stopped phase began
};

void estimateFrom(OomProgress& p, const CutPoint& cut, const Reference& r, LineOf& lineOf)
{
    const int64_t of = [&] {
        int64_t c = 0;
        for (int64_t i = r.from; i < r.to; ++i)
            c += r.events->action[size_t(i)] == TraceAction::Alloc && lineOf(r.events->stack[size_t(i)]) == p.line;
        return c;
    }();
    if (of < p.done || of == 0)
        return; // the reference did not get as far: it is not the same step
    int64_t match = nthAlloc(*r.events, lineOf, p.line, p.done, r.from, r.to);
    if (match < 0)
        return;
    // The reference's own request at the failing one's place, when it has one.
    if (const int64_t same = allocAfter(*r.events, lineOf, cut.failLine, cut.failAfter, match, r.to); same >= 0)
        match = same;
    const int64_t heldThere = r.timeline->allocatedBefore(match) + r.events->size[size_t(match)];
    const int64_t rest = std::max<int64_t>(0, r.peak - heldThere);
    p.of = of;
    p.reference = r.name;
    // Low: the rest of the reference's step as it was. High: the rest grown as this device's
    // phase outgrew the reference's up to the same point (a larger batch), or in proportion
    // to everything held, whichever is more.
    const double grown = double(p.lowerBound - cut.base);
    const double refGrown = double(heldThere - r.timeline->allocatedBefore(r.from));
    const double phaseScale = refGrown > 0 ? std::max(1.0, grown / refGrown) : 1.0;
    const double wholeScale = heldThere > 0 ? std::max(1.0, double(p.lowerBound) / double(heldThere)) : 1.0;
    p.estimateLow = p.lowerBound + rest;
    p.estimateHigh = p.lowerBound + int64_t(double(rest) * std::max(phaseScale, wholeScale));
}

} // namespace

std::optional<OomProgress> oomProgress(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a)
{
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    if (dev.ooms.empty())
        return std::nullopt;
    const OomEvent& o = dev.ooms.front();
    OomProgress p;
    p.lowerBound = tl.allocatedBefore(o.eventIndex) + o.size;
    if (o.eventIndex < 0 || size_t(o.eventIndex) >= a.phases.eventPhase.size())
        return p;
    p.phase = a.phases.eventPhase[size_t(o.eventIndex)];
    const PhaseSpan* span = a.phases.spanOf(o.eventIndex);
    if (!span)
        return p;
    LineOf lineOf(trace.snapshot.frames);
    const auto [line, done] = dominantLine(dev.trace, lineOf, span->startEvent, o.eventIndex);
    if (done == 0)
        return p;
    p.line = line;
    p.done = done;
    CutPoint cut;
    cut.phaseStart = span->startEvent;
    cut.dominant = nthAlloc(dev.trace, lineOf, line, done, span->startEvent, o.eventIndex);
    cut.failLine = lineOf(dev.oomStack(o));
    for (int64_t i = cut.dominant + 1; i < o.eventIndex; ++i)
        cut.failAfter += dev.trace.action[size_t(i)] == TraceAction::Alloc && lineOf(dev.trace.stack[size_t(i)]) == cut.failLine;
    cut.base = tl.allocatedBefore(span->startEvent);
    if (auto r = earlierIteration(dev, tl, a, o.eventIndex, p.phase))
        estimateFrom(p, cut, *r, lineOf);
    if (p.of == 0)
        if (auto r = otherDevice(trace, deviceIndex, p.phase))
            estimateFrom(p, cut, *r, lineOf);
    return p;
}

} // namespace headroom
