// SPDX-License-Identifier: MIT
#include "core/analysis/moduleforward.h"

#include "core/analysis/moduleof.h"
#include "core/analysis/timelinebands.h"

#include <algorithm>

namespace headroom {

namespace {

void widen(ModuleForwardWindow& w, int64_t event)
{
    w.firstEvent = w.firstEvent < 0 ? event : std::min(w.firstEvent, event);
    w.lastEvent = std::max(w.lastEvent, event);
    ++w.count;
}

/// The keys a module's allocation counts under: its own and, for a qualified name, each parent's.
void keysOf(const ModuleOf& m, std::vector<std::string>& out)
{
    out.clear();
    if (!m.named) {
        out.push_back(m.key());
        return;
    }
    for (size_t dot = m.name.find('.'); dot != std::string_view::npos; dot = m.name.find('.', dot + 1))
        out.push_back("n:" + std::string(m.name.substr(0, dot)));
    out.push_back("n:" + std::string(m.name));
}

int64_t allocatedAfter(const MemoryTimeline& tl, int64_t event)
{
    if (event < 0 || tl.allocated.empty())
        return tl.initialAllocated;
    return tl.allocated[size_t(std::min<int64_t>(event, int64_t(tl.allocated.size()) - 1))];
}

} // namespace

const ModuleForwardWindow* ModuleForwardWindows::find(const std::string& key) const
{
    const auto it = byKey.find(key);
    return it == byKey.end() ? nullptr : &it->second;
}

ModuleForwardWindows moduleForwardWindows(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                                          int64_t event)
{
    ModuleForwardWindows out;
    const PhaseAnalysis& phases = analysis.phases;
    out.iteration = phases.iterationOf(std::max<int64_t>(event, 0));
    if (out.iteration < 0 || size_t(out.iteration) >= phases.iterations.size())
        return out;
    const Iteration& it = phases.iterations[size_t(out.iteration)];
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    const FrameTable& ft = trace.snapshot.frames;
    const TraceEvents& events = trace.snapshot.devices[deviceIndex].trace;
    ModuleResolver moduleOfAllocation(ft, events);
    std::vector<std::string> keys;
    for (size_t i : bornInRange(tl, it.startEvent, it.endEvent)) {
        const Allocation& a = tl.allocations[i];
        if (analysis.classes[i].birthPhase != Phase::Forward)
            continue;
        const ModuleOf m = moduleOfAllocation(a.start, a.stack);
        if (!m.any())
            continue;
        keysOf(m, keys);
        for (const std::string& k : keys)
            widen(out.byKey[k], a.start);
    }
    for (auto& [key, w] : out.byKey) {
        w.peakEvent = maxEventInRange(tl, w.firstEvent, w.lastEvent);
        w.beforeBytes = allocatedAfter(tl, w.firstEvent - 1);
        w.peakBytes = allocatedAfter(tl, w.peakEvent);
        w.afterBytes = allocatedAfter(tl, w.lastEvent);
    }
    return out;
}

} // namespace headroom
