// SPDX-License-Identifier: MIT
#include "core/replay/addressmap.h"
#include "core/replay/replay.h"
#include "core/util/downsample.h"
#include "core/util/minmaxpyramid.h"
#include "core/util/units.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>
#include <unordered_map>

using namespace headroom;

namespace {

void add(DeviceData& d, TraceAction a, uint64_t addr, int64_t size)
{
    d.trace.action.push_back(a);
    d.trace.addr.push_back(addr);
    d.trace.size.push_back(size);
    d.trace.stream.push_back(0);
    d.trace.timeUs.push_back(TraceEvents::kNoTime);
    d.trace.stack.push_back(0);
}

} // namespace

TEST_CASE("Replay follows the official viewer's pairing rules", "[replay]")
{
    DeviceData d;
    add(d, TraceAction::FreeRequested, 0x100, 300); // 0: freed, never allocated in the window
    add(d, TraceAction::FreeCompleted, 0x100, 300); // 1
    add(d, TraceAction::Alloc, 0x200, 1000);        // 2
    add(d, TraceAction::Alloc, 0x300, 500);         // 3: peak 1500 + initial
    add(d, TraceAction::FreeRequested, 0x300, 500); // 4: completed right after
    add(d, TraceAction::FreeCompleted, 0x300, 500); // 5
    add(d, TraceAction::Alloc, 0x300, 500);         // 6: same peak again, not the first
    add(d, TraceAction::FreeRequested, 0x200, 1000); // 7: lone: still pending, still allocated
    add(d, TraceAction::SegmentAlloc, 0x0, 4096);   // 8
    d.segments.push_back(Segment{});
    d.segments.back().totalSize = 8192;
    d.blocks.push_back(Block{0x200, 1024, 1000, BlockState::ActivePendingFree, 0});
    d.blocks.push_back(Block{0x300, 512, 500, BlockState::ActiveAllocated, 0});
    d.blocks.push_back(Block{0x900, 2048, 2000, BlockState::ActiveAllocated, 0}); // ghost

    const MemoryTimeline t = replayDevice(d);
    CHECK(t.initialAllocated == 300 + 2000);
    CHECK(t.allocated[1] == 2000);
    CHECK(t.peakAllocated == 2000 + 1500);
    CHECK(t.peakEventIndex == 3);
    CHECK(t.allocated[7] == 2000 + 1500); // a lone free_requested does not free
    CHECK(t.pendingFreeCount == 1);
    CHECK(t.ghostBlockCount == 1);
    CHECK(t.initialAllocationCount == 2);
    CHECK(t.initialReserved == 8192 - 4096);
    CHECK(t.peakReserved == 8192);
}

TEST_CASE("The initial state can be the peak", "[replay]")
{
    DeviceData d;
    add(d, TraceAction::FreeCompleted, 0x100, 300);
    const MemoryTimeline t = replayDevice(d);
    CHECK(t.peakAllocated == 300);
    CHECK(t.peakEventIndex == -1);
}

TEST_CASE("Downsampling keeps every bucket's maximum", "[downsample]")
{
    std::vector<int64_t> v(1000000);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<int64_t>(i % 997);
    v[123457] = 5000000; // a one-event spike
    const auto idx = downsampleMinMax(v, 0, v.size(), 1920);
    CHECK(idx.size() <= 2 * 1920 + 1);
    bool found = false;
    for (size_t i : idx)
        found |= i == 123457;
    CHECK(found);
    CHECK(idx.back() == v.size() - 1);
    CHECK(std::is_sorted(idx.begin(), idx.end()));
}

TEST_CASE("Sizes are shown in binary units", "[units]")
{
    CHECK(formatBytes(512) == "512 B");
    CHECK(formatBytes(1536) == "1.50 KiB");
    CHECK(formatBytes(54802667524) == "51.04 GiB");
    CHECK(formatBytes(-3 * 1048576) == "-3.00 MiB");
    CHECK(formatDurationUs(1500) == "1.5 ms");
}

TEST_CASE("AddressMap behaves like a map under random inserts and erases", "[replay]")
{
    AddressMap m(4);
    std::unordered_map<uint64_t, uint32_t> ref;
    std::mt19937_64 rng(42);
    for (int i = 0; i < 200000; ++i) {
        const uint64_t key = 0x7f0000000000ull + (rng() % 4096) * 512; // clustered, like addresses
        switch (rng() % 3) {
        case 0:
            m.set(key, static_cast<uint32_t>(i));
            ref[key] = static_cast<uint32_t>(i);
            break;
        case 1:
            CHECK(m.erase(key) == (ref.erase(key) == 1));
            break;
        default: {
            auto it = ref.find(key);
            REQUIRE(m.find(key) == (it == ref.end() ? AddressMap::kMissing : it->second));
        }
        }
    }
    CHECK(m.size() == ref.size());
    for (auto [k, v] : ref)
        REQUIRE(m.find(k) == v);
}

TEST_CASE("The min/max pyramid downsamples like a full pass, keeping every bucket's extremes", "[downsample]")
{
    std::mt19937_64 rng(3);
    std::vector<int64_t> v(300007);
    int64_t x = 0;
    for (auto& e : v) {
        x += int64_t(rng() % 2001) - 1000;
        e = x;
    }
    v[123457] = INT64_MAX / 2; // a lone spike must survive
    v[200001] = -INT64_MAX / 2;
    const MinMaxPyramid pyramid(v);
    for (auto [first, last, buckets] : {std::tuple<size_t, size_t, size_t>{0, v.size(), 1920}, {1000, 250000, 700},
                                        {5, 90, 20}, {0, v.size(), 7}, {123000, 124000, 1920}}) {
        INFO(first << ".." << last << " in " << buckets);
        const auto idx = pyramid.downsample(v, first, last, buckets);
        REQUIRE(!idx.empty());
        CHECK(idx.back() == last - 1);
        CHECK(std::is_sorted(idx.begin(), idx.end()));
        CHECK(idx.size() <= 2 * buckets + 1);
        // The range's global extremes are among the points.
        const auto mx = size_t(std::max_element(v.begin() + ptrdiff_t(first), v.begin() + ptrdiff_t(last)) - v.begin());
        const auto mn = size_t(std::min_element(v.begin() + ptrdiff_t(first), v.begin() + ptrdiff_t(last)) - v.begin());
        CHECK(std::find(idx.begin(), idx.end(), mx) != idx.end());
        CHECK(std::find(idx.begin(), idx.end(), mn) != idx.end());
    }
    // minMax on arbitrary ranges equals a scan.
    for (int t = 0; t < 200; ++t) {
        const size_t lo = rng() % (v.size() - 1);
        const size_t hi = lo + 1 + rng() % std::min<size_t>(v.size() - lo - 1, 100000);
        size_t iMin = 0, iMax = 0;
        pyramid.minMax(v, lo, hi, iMin, iMax);
        CHECK(v[iMax] == *std::max_element(v.begin() + ptrdiff_t(lo), v.begin() + ptrdiff_t(hi)));
        CHECK(v[iMin] == *std::min_element(v.begin() + ptrdiff_t(lo), v.begin() + ptrdiff_t(hi)));
    }
}

TEST_CASE("Pending frees: the forward count equals the definition", "[replay]")
{
    // Definition (the backward pass replay used before): a free_requested is pending when the
    // next alloc/free action at its address is another free_requested, or there is none.
    auto reference = [](const TraceEvents& ev) {
        std::unordered_map<uint64_t, TraceAction> next;
        int64_t pending = 0;
        for (size_t k = ev.count(); k-- > 0;) {
            const TraceAction a = ev.action[k];
            if (a == TraceAction::FreeRequested) {
                auto it = next.find(ev.addr[k]);
                pending += it == next.end() || it->second == TraceAction::FreeRequested;
            }
            if (a == TraceAction::Alloc || a == TraceAction::FreeRequested || a == TraceAction::FreeCompleted ||
                a == TraceAction::Free)
                next[ev.addr[k]] = a;
        }
        return pending;
    };
    const TraceAction kinds[] = {TraceAction::Alloc, TraceAction::FreeRequested, TraceAction::FreeCompleted,
                                 TraceAction::Free, TraceAction::SegmentAlloc, TraceAction::Oom};
    std::mt19937_64 rng(7);
    for (int round = 0; round < 300; ++round) {
        DeviceData d;
        const int events = 1 + static_cast<int>(rng() % 200);
        const uint64_t addresses = 1 + rng() % 12; // few addresses: every interleaving occurs
        for (int i = 0; i < events; ++i)
            add(d, kinds[rng() % std::size(kinds)], 0x1000 * (rng() % addresses), 16 + static_cast<int64_t>(rng() % 64));
        INFO("round " << round);
        CHECK(replayDevice(d).pendingFreeCount == reference(d.trace));
    }
}

TEST_CASE("One stream for every event is kept as a value, not a column", "[replay][model]")
{
    TraceEvents one;
    one.append({TraceAction::Alloc, 0x100, 512, 7, TraceEvents::kNoTime, 0});
    one.append({TraceAction::FreeCompleted, 0x100, 512, 7, TraceEvents::kNoTime, 0});
    one.compactStreams();
    CHECK(one.stream.empty());
    CHECK(one.streamAt(1) == 7);
    CHECK(one.streams() == std::vector<int64_t>{7, 7});
    // Appending after the compaction brings the column back, with every earlier stream.
    one.append({TraceAction::Alloc, 0x200, 512, 9, TraceEvents::kNoTime, 0});
    CHECK(one.stream == std::vector<int64_t>{7, 7, 9});
    CHECK(one.streamAt(2) == 9);

    TraceEvents two;
    two.append({TraceAction::Alloc, 0x100, 512, 0, TraceEvents::kNoTime, 0});
    two.append({TraceAction::Alloc, 0x200, 512, 3, TraceEvents::kNoTime, 0});
    two.compactStreams(); // two streams: the column stays
    CHECK(two.stream == std::vector<int64_t>{0, 3});
}

TEST_CASE("Reserved memory is kept where it changes, read back event by event", "[replay][model]")
{
    StepCurve c;
    for (int64_t v : {5, 5, 7, 7, 7, 3, 3, 9})
        c.push_back(v);
    CHECK(c.size() == 8);
    CHECK(c.changeEvents() == std::vector<uint32_t>{0, 2, 5, 7});
    CHECK(c.dense() == std::vector<int64_t>{5, 5, 7, 7, 7, 3, 3, 9});
    CHECK(c[4] == 7);
    CHECK(c[5] == 3);
    CHECK(c.changeAt(6) == 2);
    CHECK(c.max(0) == 9);
    c.offset(10);
    CHECK(c[7] == 19);
    CHECK(StepCurve().max(-1) == -1);

    // The replay's reserved curve against a sum over the segment events.
    DeviceData d;
    const std::vector<std::pair<TraceAction, int64_t>> events = {
        {TraceAction::SegmentAlloc, 2 << 20}, {TraceAction::Alloc, 512}, {TraceAction::Alloc, 1024},
        {TraceAction::SegmentAlloc, 20 << 20}, {TraceAction::FreeCompleted, 512}, {TraceAction::SegmentFree, 2 << 20}};
    uint64_t addr = 0x1000;
    for (const auto& [a, size] : events)
        d.trace.append({a, addr += 0x100000, size, 0, TraceEvents::kNoTime, 0});
    d.trace.addr[4] = d.trace.addr[1]; // the free of the first alloc
    const MemoryTimeline tl = replayDevice(d);
    int64_t sum = 0;
    std::vector<int64_t> expected;
    for (const auto& [a, size] : events) {
        sum += a == TraceAction::SegmentAlloc ? size : a == TraceAction::SegmentFree ? -size : 0;
        expected.push_back(tl.initialReserved + sum);
    }
    CHECK(tl.reserved.dense() == expected);
    CHECK(tl.reserved.changeEvents().size() == 3);
    CHECK(tl.peakReserved == *std::max_element(expected.begin(), expected.end()));
}
