// SPDX-License-Identifier: MIT
#include "core/replay/allocatorreplay.h"

#include "core/model/recordedtensors.h"
#include "core/replay/addressmap.h"
#include "core/replay/allocatorhistory.h"
#include "core/replay/allocatorsim.h"
#include "core/replay/privatepoolranges.h"
#include "core/util/units.h"

#include <algorithm>
#include <cstdlib>

namespace headroom {

namespace {

bool isSegmentEvent(TraceAction a)
{
    return a == TraceAction::SegmentAlloc || a == TraceAction::SegmentFree || a == TraceAction::SegmentMap ||
           a == TraceAction::SegmentUnmap;
}
bool isRelease(TraceAction a) { return a == TraceAction::SegmentFree || a == TraceAction::SegmentUnmap; }

// Addresses the simulation makes up lie outside any user-space pointer a recording holds.
constexpr uint64_t kInventedBase = 0xf000000000000000ull;

/// The device as the replay's driver: under the recorded setting it answers each cudaMalloc
/// and map as the recording did (the request's recorded segment events, in order); under
/// another setting from the capacity.
class ReplayMemory final : public DeviceMemory {
public:
    const TraceEvents* ev = nullptr;
    const std::vector<uint32_t>* group = nullptr;
    size_t cursor = 0;
    bool followRecording = false;
    bool requestIsOom = false;
    int64_t capacity = 0;

    bool malloc(int64_t size, int64_t reserved, int64_t, uint64_t& addr) override
    {
        if (followRecording) {
            if (!answer(TraceAction::SegmentAlloc))
                return false;
            addr = m_lastAddr ? m_lastAddr : invent(size);
            return true;
        }
        if (capacity > 0 && reserved + size > capacity)
            return false;
        addr = invent(size);
        return true;
    }
    bool map(int64_t size, int64_t reserved) override
    {
        if (followRecording)
            return answer(TraceAction::SegmentMap);
        return capacity <= 0 || reserved + size <= capacity;
    }
    uint64_t reserveAddressSpace(int64_t size) override
    {
        // The first map of a new expandable segment is at its base.
        if (followRecording && group && cursor < group->size() && ev->action[(*group)[cursor]] == TraceAction::SegmentMap)
            return ev->addr[(*group)[cursor]];
        return invent(size);
    }
    int64_t allowedMaximum() const override { return capacity; }

private:
    /// True when the recording got memory at this point of the request; false when it
    /// released cached memory first (its cudaMalloc had failed) or gave up with an OOM.
    bool answer(TraceAction grow)
    {
        m_lastAddr = 0;
        if (cursor < group->size()) {
            const uint32_t i = (*group)[cursor];
            if (isRelease(ev->action[i])) {
                while (cursor < group->size() && isRelease(ev->action[(*group)[cursor]]))
                    ++cursor;
                return false;
            }
            ++cursor;
            if (ev->action[i] == grow)
                m_lastAddr = ev->addr[i];
            return true;
        }
        return !requestIsOom;
    }
    uint64_t invent(int64_t size)
    {
        const uint64_t at = m_next;
        m_next += (uint64_t(std::max<int64_t>(size, 1)) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
        return at;
    }
    uint64_t m_lastAddr = 0;
    uint64_t m_next = kInventedBase;
};

std::string describe(TraceAction a, uint64_t addr, int64_t size)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s 0x%llx ", actionName(a), static_cast<unsigned long long>(addr));
    return buf + formatBytes(size);
}

} // namespace

AllocatorReplayResult replayAllocator(const Snapshot& snap, const DeviceData& dev, const MemoryTimeline& tl,
                                      const AllocatorReplayOptions& options)
{
    AllocatorReplayResult r;
    r.device = dev.device;
    const AllocatorConfig recorded = AllocatorConfig::fromSnapshot(snap.allocatorSettings, &r.settingFromFile);
    r.config = options.config.value_or(recorded);
    r.recordedSetting = !options.config || *options.config == recorded;
    const TraceEvents& ev = dev.trace;
    const size_t n = ev.count();
    r.events = int64_t(n);

    ReplayMemory memory;
    memory.ev = &ev;
    // A CPU recording has no segments to follow: its simulation runs free, as a setting would.
    memory.followRecording = !options.config && tl.reservedRecorded;
    r.followedRecording = memory.followRecording;
    AllocatorSim sim(r.config, memory);

    // Private pools (CUDA graphs, MemPool), numbered from 1 for the simulation (0: default);
    // by address where the entries name none: requests landing in them stay there.
    std::vector<std::pair<int64_t, int64_t>> poolIds;
    auto privatePoolOf = [&](std::pair<int64_t, int64_t> id) {
        if (id == std::pair<int64_t, int64_t>{0, 0})
            return 0;
        auto it = std::find(poolIds.begin(), poolIds.end(), id);
        if (it == poolIds.end()) {
            poolIds.push_back(id);
            return int(poolIds.size());
        }
        return int(it - poolIds.begin()) + 1;
    };
    const PrivatePoolRanges privateRanges(dev);
    auto poolAt = [&](uint64_t addr) { return privatePoolOf(privateRanges.poolAt(addr)); };

    // The recorded address of each live allocation -> its simulated block.
    AddressMap live;
    // Memory from before the window: the segments and blocks reconstructed at the first event.
    const bool before = tl.initialAllocationCount > 0 || tl.initialReserved > 0;
    if (before) {
        r.initialStateReconstructed = true;
        const AllocatorHistory history(dev, tl);
        const AllocatorState st = history.stateAt(tl, -1);
        for (const StateSegment& seg : st.segments) {
            std::vector<AllocatorSim::InitialBlock> blocks;
            std::vector<uint64_t> liveAddrs;
            for (uint32_t b = seg.firstBlock; b < seg.firstBlock + seg.blockCount; ++b) {
                const StateBlock& sb = st.blocks[b];
                const bool allocated = sb.allocation != StateBlock::kNoAllocation;
                blocks.push_back({sb.address, sb.size, allocated, sb.requested});
                if (allocated)
                    liveAddrs.push_back(tl.allocations[sb.allocation].addr);
            }
            const bool small = !seg.largePool;
            bool expandable = false;
            for (const Segment& s : dev.segments)
                if (s.expandable && seg.address >= s.address && seg.address < s.address + uint64_t(std::max<int64_t>(0, s.totalSize)))
                    expandable = true;
            const std::vector<int32_t> ids =
                sim.addSegment(seg.address, seg.stream, small, poolAt(seg.address), blocks, expandable);
            for (size_t k = 0; k < ids.size() && k < liveAddrs.size(); ++k)
                live.set(liveAddrs[k], uint32_t(ids[k]));
        }
        // Live allocations in no known segment: kept so that their frees match.
        for (const Allocation& a : tl.allocations)
            if (a.start == Allocation::kBeforeWindow && live.find(a.addr) == AddressMap::kMissing)
                live.set(a.addr, uint32_t(sim.addDetached(a.addr, sim.roundSize(a.size), a.size, 0)));
        sim.events().clear();
    }
    int64_t recordedReserved = sim.reserved();
    r.recordedReservedPeak = recordedReserved;
    r.reservedPeak = sim.reserved();

    // Capacity: given, or what the recording had when it failed (reserved + device_free).
    int64_t recordedAtFirstOom = -1;
    {
        int64_t res = recordedReserved;
        for (size_t i = 0; i < n; ++i) {
            const TraceAction a = ev.action[i];
            if (a == TraceAction::SegmentAlloc || a == TraceAction::SegmentMap)
                res += ev.size[i];
            else if (isRelease(a))
                res -= ev.size[i];
            else if (a == TraceAction::Oom) {
                r.recordedOomEvent = int64_t(i);
                r.recordedOomSize = ev.size[i];
                recordedAtFirstOom = res;
                break;
            }
        }
    }
    if (options.capacity > 0) {
        r.capacity = options.capacity;
        r.capacitySource = "--capacity";
    } else if (r.recordedOomEvent >= 0) {
        int64_t deviceFree = 0;
        for (const auto& [i, f] : ev.deviceFree)
            if (int64_t(i) == r.recordedOomEvent)
                deviceFree = f;
        r.capacity = recordedAtFirstOom + deviceFree;
        r.capacitySource = "the OOM record";
    }
    if (!memory.followRecording)
        memory.capacity = r.capacity;
    if (options.keepCurve)
        r.simulatedReserved.assign(n, 0);

    std::vector<uint32_t> group; // the recorded segment events since the last request
    memory.group = &group;
    auto noteDivergence = [&](int64_t at, std::string rec, std::string sim_, std::string why) {
        if (!r.firstDivergence)
            r.firstDivergence = AllocatorReplayResult::Divergence{at, std::move(rec), std::move(sim_), std::move(why)};
    };
    auto oomState = [&](int64_t at, int64_t size) {
        return AllocatorReplayResult::Oom{at, size, sim.reserved(), sim.allocated(), sim.cachedFree(), sim.largestFree()};
    };
    // Compares what the simulation did for one request with what the recording did.
    auto compareGroup = [&](int64_t at) {
        const auto& simEvents = sim.events();
        r.segmentEventsSimulated += int64_t(simEvents.size());
        if (!memory.followRecording) {
            sim.events().clear();
            return;
        }
        const size_t common = std::min(simEvents.size(), group.size());
        bool same = simEvents.size() == group.size();
        for (size_t k = 0; k < common; ++k) {
            const uint32_t g = group[k];
            if (simEvents[k].action == ev.action[g] && simEvents[k].size == ev.size[g])
                ++r.segmentEventsMatched;
            else
                same = false;
        }
        if (!same && !r.firstDivergence) {
            std::string rec, got;
            for (uint32_t g : group)
                rec += (rec.empty() ? "" : ", ") + describe(ev.action[g], ev.addr[g], ev.size[g]);
            for (const auto& e : simEvents)
                got += (got.empty() ? "" : ", ") + describe(e.action, e.addr, e.size);
            std::string why;
            if (group.empty())
                why = "the recording served the request from its cache where the simulation needed new memory";
            else if (simEvents.empty())
                why = "the recording needed new memory where the simulation found a cached block";
            else
                why = "the simulation changed segments differently";
            why += r.initialStateReconstructed
                       ? ": the cache before the window is reconstructed from the final segments, so blocks freed "
                         "before recording began are guesses"
                       : ": the cached blocks differ (a free the trace lost, a stream's deferred free, or a rule the "
                         "simulation lacks)";
            noteDivergence(at, rec.empty() ? "no segment event" : rec, got.empty() ? "no segment event" : got,
                           std::move(why));
        }
        sim.events().clear();
    };
    auto applyRecordedDelta = [&](size_t from, size_t to) {
        for (size_t i = from; i < to; ++i) {
            const TraceAction a = ev.action[i];
            if (a == TraceAction::SegmentAlloc || a == TraceAction::SegmentMap)
                recordedReserved += ev.size[i];
            else if (isRelease(a))
                recordedReserved -= ev.size[i];
        }
        r.recordedReservedPeak = std::max(r.recordedReservedPeak, recordedReserved);
    };
    auto measure = [&](int64_t at) {
        if (sim.reserved() > r.reservedPeak) {
            r.reservedPeak = sim.reserved();
            r.reservedPeakEvent = at;
        }
        if (memory.followRecording) {
            const int64_t diff = std::llabs(sim.reserved() - recordedReserved);
            if (diff > r.maxReservedDifference) {
                r.maxReservedDifference = diff;
                r.maxReservedDifferenceEvent = at;
            }
        }
    };
    // Recorded segment releases with no request behind them: torch.cuda.empty_cache().
    auto flushSpontaneous = [&](int64_t at) {
        if (group.empty())
            return;
        if (std::any_of(group.begin(), group.end(), [&](uint32_t g) { return isRelease(ev.action[g]); }))
            sim.emptyCache();
        compareGroup(at);
        group.clear();
    };

    size_t groupStart = 0;
    for (size_t i = 0; i < n; ++i) {
        const TraceAction a = ev.action[i];
        const auto at = int64_t(i);
        if (isSegmentEvent(a)) {
            if (group.empty())
                groupStart = i;
            group.push_back(uint32_t(i));
            r.segmentEventsRecorded += 1;
            if (options.keepCurve)
                r.simulatedReserved[i] = sim.reserved();
            continue;
        }
        applyRecordedDelta(group.empty() ? i : groupStart, i);
        if (a == TraceAction::Alloc || a == TraceAction::Oom) {
            ++r.requests;
            const bool isOom = a == TraceAction::Oom;
            const uint64_t addr = ev.addr[i];
            // The entry's own pool_id (2026 PyTorch) where the file has it: it also names a
            // pool whose segments were gone by the snapshot. Else the final segments' ranges.
            const auto entryPool = entryPoolAt(ev.poolIds, at);
            const int privatePool = isOom ? 0 : entryPool ? privatePoolOf(*entryPool) : poolAt(addr);
            // Recorded releases before a request the cache can serve were an empty_cache().
            if (!group.empty() && isRelease(ev.action[group.front()]) &&
                sim.servesFromCache(ev.size[i], ev.streamAt(i), privatePool))
                sim.emptyCache();
            memory.cursor = 0;
            memory.requestIsOom = isOom;
            int32_t b = sim.malloc(ev.size[i], ev.streamAt(i), privatePool);
            if (b == AllocatorSim::kNone && !memory.followRecording) {
                const auto state = oomState(at, sim.roundSize(ev.size[i]));
                if (!r.firstSimulatedOom)
                    r.firstSimulatedOom = state;
                if (isOom && !r.atRecordedOom)
                    r.atRecordedOom = state;
                // Go on past it as if the device were larger, so later frees still match.
                memory.capacity = 0;
                if (!isOom)
                    b = sim.malloc(ev.size[i], ev.streamAt(i), privatePool);
            } else if (isOom && !memory.followRecording && !r.atRecordedOom) {
                r.atRecordedOom = oomState(at, sim.roundSize(ev.size[i]));
            }
            const std::vector<AllocatorSim::SegmentEvent> simEvents = sim.events();
            compareGroup(at);
            measure(at);
            if (isOom) {
                if (memory.followRecording && b != AllocatorSim::kNone)
                    noteDivergence(at, describe(a, 0, ev.size[i]), "served",
                                   "the simulation served a request the recording could not");
                if (b != AllocatorSim::kNone)
                    sim.free(b);
                group.clear();
                if (options.keepCurve)
                    r.simulatedReserved[i] = sim.reserved();
                continue;
            }
            if (const uint32_t old = live.find(addr); old != AddressMap::kMissing) {
                sim.free(int32_t(old)); // its free was lost
                ++r.unmatchedFrees;
            }
            if (memory.followRecording && (b == AllocatorSim::kNone || sim.address(b) != addr)) {
                // Continue from the recorded state: the recording's new segments, the
                // recording's placement.
                ++r.placementDivergences;
                if (!r.firstDivergence)
                    noteDivergence(at, describe(a, addr, ev.size[i]),
                                   b == AllocatorSim::kNone ? std::string("out of memory")
                                                            : describe(a, sim.address(b), ev.size[i]),
                                   "the simulation placed the allocation elsewhere (its cached blocks differ)");
                if (b != AllocatorSim::kNone)
                    sim.free(b);
                for (const auto& e : simEvents)
                    if (e.action == TraceAction::SegmentAlloc && e.addr >= kInventedBase)
                        sim.dropFreeSegment(e.addr);
                for (uint32_t g : group)
                    if (ev.action[g] == TraceAction::SegmentAlloc &&
                        std::none_of(simEvents.begin(), simEvents.end(), [&](const auto& e) { return e.addr == ev.addr[g]; }))
                        sim.addSegment(ev.addr[g], ev.streamAt(g), ev.size[g] == AllocatorSim::kSmallBuffer, privatePool,
                                       {{ev.addr[g], ev.size[g], false, 0}});
                b = sim.allocateAt(addr, ev.size[i], ev.streamAt(i));
                if (b == AllocatorSim::kNone)
                    b = sim.addDetached(addr, sim.roundSize(ev.size[i]), ev.size[i], ev.streamAt(i));
                sim.events().clear();
            }
            group.clear();
            if (b != AllocatorSim::kNone)
                live.set(addr, uint32_t(b));
        } else {
            flushSpontaneous(at);
            if (a == TraceAction::FreeCompleted || a == TraceAction::Free) {
                if (const uint32_t b = live.find(ev.addr[i]); b != AddressMap::kMissing) {
                    sim.free(int32_t(b));
                    live.erase(ev.addr[i]);
                } else {
                    ++r.unmatchedFrees;
                }
            }
            measure(at);
        }
        if (options.keepCurve)
            r.simulatedReserved[i] = sim.reserved();
    }
    if (!group.empty()) {
        applyRecordedDelta(groupStart, n);
        flushSpontaneous(int64_t(n) - 1);
        measure(int64_t(n) - 1);
        if (options.keepCurve)
            r.simulatedReserved[n - 1] = sim.reserved();
    }
    if (r.recordedOomEvent >= 0) {
        r.oomAvoided = !(r.firstSimulatedOom && r.firstSimulatedOom->event <= r.recordedOomEvent);
        if (memory.followRecording)
            r.oomAvoided = false; // the recording's own answer
    }
    return r;
}

} // namespace headroom
