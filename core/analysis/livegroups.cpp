// SPDX-License-Identifier: MIT
#include "core/analysis/livegroups.h"

#include "core/analysis/moduleof.h"
#include "core/analysis/usercode.h"
#include "core/model/recordedtensors.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace headroom {

namespace {

struct StackKey {
    std::vector<uint32_t> frames;
    TensorCategory category;
    int64_t size;
    bool operator<(const StackKey& o) const
    {
        return std::tie(frames, category, size) < std::tie(o.frames, o.category, o.size);
    }
};

struct Accumulated {
    LiveGroup group;
    std::array<int64_t, kPhaseCount> byPhase{};
};

template <typename T, typename Bytes>
void keepLargest(std::vector<T>& v, size_t top, Bytes bytes)
{
    std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) { return bytes(a) > bytes(b); });
    if (v.size() > top)
        v.resize(top);
}

} // namespace

LiveGroups LiveGroups::at(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis, int64_t event,
                          size_t top, size_t frameCount, const UserCategories* rules)
{
    LiveGroups out;
    if (rules) {
        UserCategoryTotals u = userCategoriesAt(trace, deviceIndex, analysis, event, *rules);
        out.byUserCategory = std::move(u.groups);
        out.unclaimedBytes = u.unclaimedBytes;
        out.unclaimedCount = u.unclaimedCount;
    }
    const TraceEvents& events = trace.snapshot.devices[deviceIndex].trace;
    out.event = event;
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    const FrameTable& ft = trace.snapshot.frames;
    out.breakdown = analysis.breakdownAt(tl, event);
    // Keyed by the telling frames, not the stack id: two stacks that differ only in
    // interpreter or allocator frames are the same line of the user's code.
    std::unordered_map<uint32_t, std::vector<uint32_t>> siteOfStack;
    std::map<StackKey, Accumulated> groups;
    std::map<std::string, ModuleGroup> modules; // ordered: equal sizes list the same way every run
    ModuleResolver moduleOfAllocation(ft, events);
    for (size_t i : analysis.liveAt(tl, event)) {
        const Allocation& a = tl.allocations[i];
        const AllocationClass& c = analysis.classes[i];
        out.bytes += a.size;
        ++out.count;
        auto site = siteOfStack.find(a.stack);
        if (site == siteOfStack.end())
            site = siteOfStack.emplace(a.stack, ft.topFrames(a.stack, frameCount)).first;
        Accumulated& g = groups[{site->second, c.category, a.size}];
        if (g.group.count == 0) {
            g.group.category = c.category;
            g.group.size = a.size;
            for (uint32_t f : site->second)
                g.group.frames.push_back(ft.formatFrame(f));
            if (const uint32_t user = userCodeFrame(ft, a.stack); user != kNoFrame)
                g.group.userCode = ft.formatFrame(user);
        }
        ++g.group.count;
        g.group.bytes += a.size;
        g.byPhase[size_t(c.birthPhase)] += a.size;
        const ModuleOf m = moduleOfAllocation(a.start, a.stack);
        if (m.any()) {
            std::string key = m.key();
            ModuleGroup& mg = modules[key];
            if (mg.count == 0) {
                mg.key = std::move(key);
                mg.source = moduleSourceKey(m);
                mg.name = m.named && m.name.empty() ? "(root module)" : std::string(m.name);
                if (m.forwardFrame != UINT32_MAX)
                    mg.forward = ft.formatFrame(m.forwardFrame);
            }
            ++mg.count;
            mg.bytes += a.size;
            mg.byCategory[size_t(c.category)] += a.size;
            out.moduleBytes += a.size;
            if (m.fromMetadata)
                out.metadataModuleBytes += a.size;
            else if (m.named)
                out.recordedModuleBytes += a.size;
        }
    }
    for (auto& [key, acc] : groups) {
        acc.group.phase = Phase(std::max_element(acc.byPhase.begin(), acc.byPhase.end()) - acc.byPhase.begin());
        out.byStack.push_back(std::move(acc.group));
    }
    out.stackGroups = out.byStack.size();
    keepLargest(out.byStack, top, [](const LiveGroup& g) { return g.bytes; });
    for (auto& [frame, mg] : modules)
        out.byModule.push_back(std::move(mg));
    keepLargest(out.byModule, top, [](const ModuleGroup& g) { return g.bytes; });
    return out;
}

UserCategoryTotals userCategoriesAt(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                                    int64_t event, const UserCategories& rules)
{
    UserCategoryTotals out;
    for (const UserCategoryRule& r : rules.rules())
        out.groups.push_back({r.name, r.color, 0, 0, {}});
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    const FrameTable& ft = trace.snapshot.frames;
    const TraceEvents& events = trace.snapshot.devices[deviceIndex].trace;
    UserCategories::StackMatches cache; // stack ids are this file's
    for (size_t i : analysis.liveAt(tl, event)) {
        const Allocation& a = tl.allocations[i];
        out.bytes += a.size;
        const std::string_view meta =
            rules.readsMetadata() ? entryStringAt(events.userMetadata, ft.strings(), a.start) : std::string_view();
        const int r = rules.match(ft, a.stack, meta, cache);
        if (r < 0) {
            out.unclaimedBytes += a.size;
            ++out.unclaimedCount;
            continue;
        }
        UserCategoryGroup& g = out.groups[size_t(r)];
        ++g.count;
        g.bytes += a.size;
        g.byCategory[size_t(analysis.classes[i].category)] += a.size;
    }
    return out;
}

} // namespace headroom
