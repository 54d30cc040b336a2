// SPDX-License-Identifier: MIT
// LiveSetIndex against its own contract: the same set as testing every allocation's
// [start, end) at the event, whatever checkpoint the query starts from.
#include "core/replay/livesetindex.h"
#include "core/replay/replay.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace headroom;

namespace {

/// The definition the index must agree with: a pass over every allocation.
std::vector<uint32_t> bruteForce(const MemoryTimeline& tl, int64_t event)
{
    std::vector<uint32_t> out;
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        if (tl.allocations[i].aliveAfter(event))
            out.push_back(static_cast<uint32_t>(i));
    return out;
}

Allocation alloc(int64_t start, int64_t end, int64_t size = 16)
{
    Allocation a;
    a.size = size;
    a.start = start;
    a.end = end;
    return a;
}

MemoryTimeline timelineOf(size_t events, std::vector<Allocation> allocations)
{
    MemoryTimeline tl;
    tl.allocated.assign(events, 0);
    tl.reserved.assign(events, 0);
    tl.allocations = std::move(allocations);
    return tl;
}

void add(DeviceData& d, TraceAction a, uint64_t addr, int64_t size)
{
    d.trace.append({.action = a, .addr = addr, .size = size});
}

} // namespace

TEST_CASE("LiveSetIndex: an empty timeline has nothing alive anywhere", "[livesetindex]")
{
    const MemoryTimeline tl;
    const LiveSetIndex index(tl);
    CHECK(index.liveAfter(tl, -1).empty());
    CHECK(index.liveAfter(tl, 0).empty());
    CHECK(index.liveAfter(tl, 100).empty());
    CHECK(index.storedIndices() == 0);

    const LiveSetIndex unbuilt;
    CHECK(unbuilt.liveAfter(tl, 0).empty());
    CHECK(unbuilt.checkpointCount() == 0);
}

TEST_CASE("LiveSetIndex: allocations known only from the final state, no events", "[livesetindex]")
{
    // A snapshot without trace entries: every block is alive since before the window.
    const MemoryTimeline tl = timelineOf(0, {alloc(Allocation::kBeforeWindow, Allocation::kStillAlive),
                                             alloc(Allocation::kBeforeWindow, Allocation::kStillAlive)});
    const LiveSetIndex index(tl);
    CHECK(index.liveAfter(tl, -1) == std::vector<uint32_t>{0, 1});
    CHECK(index.liveAfter(tl, 0) == std::vector<uint32_t>{0, 1});
}

TEST_CASE("LiveSetIndex: one event", "[livesetindex]")
{
    const MemoryTimeline tl = timelineOf(1, {alloc(0, Allocation::kStillAlive)});
    const LiveSetIndex index(tl);
    CHECK(index.liveAfter(tl, -1).empty()); // before the event: not born yet
    CHECK(index.liveAfter(tl, 0) == std::vector<uint32_t>{0});
    CHECK(index.liveAfter(tl, 5) == std::vector<uint32_t>{0}); // past the end: the final state
}

TEST_CASE("LiveSetIndex: the boundaries of a lifetime", "[livesetindex]")
{
    // 0: alive before the window, freed at event 2
    // 1: born at 0, freed at 3
    // 2: born at 1, still alive
    // 3: born at 3 (the event that frees 1: an alloc over a lost free), freed at the last event
    // 4: alive before the window and at its end
    // 5: born at the last event
    const MemoryTimeline tl = timelineOf(
        5, {alloc(Allocation::kBeforeWindow, 2), alloc(0, 3), alloc(1, Allocation::kStillAlive), alloc(3, 4),
            alloc(Allocation::kBeforeWindow, Allocation::kStillAlive), alloc(4, Allocation::kStillAlive)});
    const LiveSetIndex index(tl);
    CHECK(index.liveAfter(tl, -1) == std::vector<uint32_t>{0, 4});
    CHECK(index.liveAfter(tl, 0) == std::vector<uint32_t>{0, 1, 4});
    CHECK(index.liveAfter(tl, 1) == std::vector<uint32_t>{0, 1, 2, 4});
    CHECK(index.liveAfter(tl, 2) == std::vector<uint32_t>{1, 2, 4}); // freed at the query event: gone
    CHECK(index.liveAfter(tl, 3) == std::vector<uint32_t>{2, 3, 4}); // one dies, one is born at 3
    CHECK(index.liveAfter(tl, 4) == std::vector<uint32_t>{2, 4, 5}); // the last event
    for (int64_t e = -1; e <= 5; ++e) {
        INFO("event " << e);
        CHECK(index.liveAfter(tl, e) == bruteForce(tl, e));
    }
}

TEST_CASE("LiveSetIndex: checkpoints are spaced by kMinSpacing or the live set, whichever is larger",
          "[livesetindex]")
{
    const int64_t spacing = LiveSetIndex::kMinSpacing;
    SECTION("nothing alive: one checkpoint per kMinSpacing events")
    {
        const MemoryTimeline tl = timelineOf(static_cast<size_t>(5 * spacing), {});
        const LiveSetIndex index(tl);
        CHECK(index.checkpointCount() == 5);
        CHECK(index.storedIndices() == 0);
    }
    SECTION("a live set larger than kMinSpacing stretches the distance")
    {
        // 3 * spacing allocations alive throughout: after the first checkpoint the next one
        // is 3 * spacing events further, so 6 * spacing events hold 2 checkpoints, not 6.
        std::vector<Allocation> allocs(static_cast<size_t>(3 * spacing),
                                       alloc(Allocation::kBeforeWindow, Allocation::kStillAlive));
        const MemoryTimeline tl = timelineOf(static_cast<size_t>(6 * spacing), allocs);
        const LiveSetIndex index(tl);
        CHECK(index.checkpointCount() == 2);
        CHECK(index.liveAfter(tl, 6 * spacing - 1).size() == allocs.size());
    }
}

TEST_CASE("LiveSetIndex equals a linear scan at every event of a replayed trace", "[livesetindex]")
{
    // A random trace long enough for several checkpoints, replayed as the loader does: lone
    // frees (alive before the window), allocations that outlive it, short and long lifetimes.
    std::mt19937_64 rng(20);
    DeviceData d;
    std::vector<uint64_t> live;
    uint64_t next = 0x10000;
    const int events = 14000;
    for (int i = 0; i < events; ++i) {
        const auto r = rng() % 100;
        if (r < 3) {
            add(d, TraceAction::FreeCompleted, 0x7000000 + uint64_t(i) * 512, 256); // freed, never allocated here
        } else if (live.empty() || r < 52 + static_cast<int>(live.size() < 50) * 30) {
            live.push_back(next);
            add(d, TraceAction::Alloc, next, 512);
            next += 512;
        } else {
            // Mostly recent allocations (temporaries), sometimes an old one (a long lifetime).
            const size_t k = rng() % 4 == 0 ? rng() % live.size() : live.size() - 1 - rng() % std::min<size_t>(live.size(), 8);
            add(d, TraceAction::FreeCompleted, live[k], 512);
            live.erase(live.begin() + static_cast<ptrdiff_t>(k));
        }
    }
    const MemoryTimeline tl = replayDevice(d);
    REQUIRE(tl.allocated.size() == static_cast<size_t>(events));
    REQUIRE(tl.initialAllocationCount > 0);
    const LiveSetIndex index(tl);
    REQUIRE(index.checkpointCount() >= 3);
    // Every checkpoint holds at most the distance to the next one, the last one at most every allocation.
    CHECK(index.storedIndices() <= tl.allocated.size() + tl.allocations.size());

    // Every event around each checkpoint (the live set stays below kMinSpacing here, so they
    // lie at its multiples) and every 7th event elsewhere: each query replays up to
    // kMinSpacing events, so all 14k would take seconds.
    const int64_t spacing = LiveSetIndex::kMinSpacing;
    size_t mismatches = 0, queries = 0;
    for (int64_t e = -1; e <= events; ++e) {
        const int64_t fromCheckpoint = (e + 1) % spacing;
        if (e % 7 != 0 && fromCheckpoint > 40 && fromCheckpoint < spacing - 40 && e < events - 40)
            continue;
        ++queries;
        if (index.liveAfter(tl, e) != bruteForce(tl, e)) {
            if (mismatches++ < 5)
                FAIL_CHECK("live set differs after event " << e);
        }
    }
    CHECK(mismatches == 0);
    CHECK(queries > 2000);
}
