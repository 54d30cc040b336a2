// SPDX-License-Identifier: MIT
// The allocator's state at any event (LiveSetIndex checkpoints + AllocatorHistory).
#include "core/io/loader.h"
#include "core/replay/allocationbands.h"
#include "core/replay/allocatorhistory.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>

using namespace headroom;

namespace {

std::vector<uint32_t> bruteLive(const MemoryTimeline& tl, int64_t e)
{
    std::vector<uint32_t> out;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if ((a.start == Allocation::kBeforeWindow || a.start <= e) && (a.end == Allocation::kStillAlive || a.end > e))
            out.push_back(uint32_t(i));
    }
    return out;
}

std::vector<int64_t> sampleEvents(int64_t n, int count)
{
    std::vector<int64_t> ev{-1, 0, n - 1, n - 2, LiveSetIndex::kMinSpacing - 1, LiveSetIndex::kMinSpacing,
                            LiveSetIndex::kMinSpacing + 1};
    std::mt19937_64 rng(7);
    for (int i = 0; i < count; ++i)
        ev.push_back(int64_t(rng() % uint64_t(std::max<int64_t>(1, n))));
    ev.erase(std::remove_if(ev.begin(), ev.end(), [n](int64_t e) { return e < -1 || e >= n; }), ev.end());
    return ev;
}

struct Builder {
    DeviceData dev;
    void add(TraceAction a, uint64_t addr, int64_t size)
    {
        auto& t = dev.trace;
        t.action.push_back(a);
        t.addr.push_back(addr);
        t.size.push_back(size);
        t.stream.push_back(0);
        t.timeUs.push_back(TraceEvents::kNoTime);
        t.stack.push_back(0);
    }
};

} // namespace

TEST_CASE("Live sets from checkpoints equal a brute-force pass, on every real snapshot", "[allocator][real]")
{
    for (const char* name : {"pt27_kk_memory_ctx128_fullstep.pickle", "pt27_silmont_mem_snapshot.pickle",
                             "pt20_yiyi_1.3b_snapshot.pickle", "pt20_yiyi_oom_snapshot.pickle",
                             "pt21_ftcourse_memory_snapshot.pickle"}) {
        auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/" + name);
        for (size_t d = 0; d < trace->timelines.size(); ++d) {
            const MemoryTimeline& tl = trace->timelines[d];
            const DeviceData& dev = trace->snapshot.devices[d];
            const AllocatorHistory h(dev, tl);
            const auto n = int64_t(dev.trace.count());
            for (int64_t e : sampleEvents(n, 60)) {
                INFO(name << " device " << dev.device << " event " << e);
                REQUIRE(h.liveIndex().liveAfter(tl, e) == bruteLive(tl, e));
                const AllocatorState st = h.stateAt(tl, e);
                // The reconstructed state carries the replayed curves' totals.
                if (e >= 0) {
                    CHECK(st.reserved == tl.reserved[size_t(e)]);
                    CHECK(st.allocated == tl.allocated[size_t(e)]);
                }
                CHECK(st.unplacedCount == 0);
                int64_t blockBytes = 0;
                for (const StateSegment& s : st.segments) {
                    int64_t inSeg = 0;
                    for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b)
                        inSeg += st.blocks[b].size;
                    CHECK(inSeg == s.size); // blocks tile each segment exactly
                    blockBytes += inSeg;
                }
                CHECK(blockBytes == st.reserved);
                CHECK(st.allocatedBlocks + st.pendingFree + st.inactive == st.reserved);
            }
        }
    }
}

TEST_CASE("The state after the last event is the snapshot's own segments and blocks", "[allocator][real]")
{
    for (const char* name : {"pt27_kk_memory_ctx128_fullstep.pickle", "pt27_silmont_mem_snapshot.pickle",
                             "pt21_ftcourse_memory_snapshot.pickle", "pt20_yiyi_oom_snapshot.pickle"}) {
        INFO(name);
        auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/" + name);
        const DeviceData& dev = trace->snapshot.devices[0];
        const MemoryTimeline& tl = trace->timelines[0];
        const AllocatorHistory h(dev, tl);
        const AllocatorState st = h.stateAt(tl, int64_t(dev.trace.count()) - 1);
        int64_t reserved = 0, active = 0, pending = 0, largest = 0;
        for (const Segment& s : dev.segments)
            reserved += s.totalSize;
        for (const Block& b : dev.blocks) {
            if (b.state == BlockState::ActiveAllocated)
                active += b.size;
            if (b.state == BlockState::ActivePendingFree)
                pending += b.size;
            if (b.state == BlockState::Inactive)
                largest = std::max(largest, b.size);
        }
        CHECK(st.reserved == reserved);
        CHECK(st.segments.size() == dev.segments.size());
        // Block sizes are reconstructed from requested sizes (512-byte rounding, unsplit
        // remainders): equal to the recorded blocks within a fraction of a percent.
        CHECK(double(st.allocatedBlocks + st.pendingFree) == Approx(double(active + pending)).epsilon(0.005));
        CHECK(double(st.largestFree) == Approx(double(largest)).epsilon(0.01));
    }
}

TEST_CASE("Pending free, cached gaps and the largest free block on a hand-made trace", "[allocator]")
{
    Builder b;
    const uint64_t seg = 0x7f0000000000;
    b.add(TraceAction::SegmentAlloc, seg, 20 << 20);           // 0
    b.add(TraceAction::Alloc, seg, 4 << 20);                   // 1: A
    b.add(TraceAction::Alloc, seg + (4 << 20), 3000000);        // 2: B, rounded to 3000320
    b.add(TraceAction::Alloc, seg + (8 << 20), 2 << 20);        // 3: C
    b.add(TraceAction::FreeRequested, seg, 4 << 20);           // 4: A pending
    b.add(TraceAction::FreeCompleted, seg, 4 << 20);           // 5: A free
    b.add(TraceAction::Alloc, 0x7f1000000000, 1000);           // 6: D outside any segment (lost events)
    const MemoryTimeline tl = replayDevice(b.dev);
    const AllocatorHistory h(b.dev, tl);

    const AllocatorState before = h.stateAt(tl, -1);
    CHECK(before.segments.empty());
    CHECK(before.reserved == 0);

    const AllocatorState s3 = h.stateAt(tl, 3);
    REQUIRE(s3.segments.size() == 1);
    CHECK(s3.reserved == 20 << 20);
    CHECK(s3.allocated == (4 << 20) + 3000000 + (2 << 20));
    // A | B (+ the 1,193,984-byte gap to C is above 1 MiB: cached free) | C | free tail
    REQUIRE(s3.blocks.size() == 5);
    CHECK(s3.blocks[1].size == 3000320);
    CHECK(s3.blocks[2].state == BlockState::Inactive);
    CHECK(s3.blocks[2].size == (8 << 20) - (4 << 20) - 3000320);
    CHECK(s3.largestFree == 10 << 20);
    CHECK(s3.internal == 320);
    CHECK(s3.unusableFor(2 << 20) == (8 << 20) - (4 << 20) - 3000320);

    const AllocatorState s4 = h.stateAt(tl, 4);
    CHECK(s4.blocks[0].state == BlockState::ActivePendingFree);
    CHECK(s4.pendingFree == 4 << 20);

    const AllocatorState s5 = h.stateAt(tl, 5);
    CHECK(s5.blocks[0].state == BlockState::Inactive);
    CHECK(s5.blocks[0].size == 4 << 20);
    CHECK(s5.pendingFree == 0);

    const AllocatorState s6 = h.stateAt(tl, 6);
    CHECK(s6.unplacedCount == 1);
    CHECK(s6.unplacedBytes == 1000);
    CHECK(h.stateAt(tl, 1000).event == 6); // clamped
}

TEST_CASE("Expandable segments: partial unmaps keep the rest mapped", "[allocator]")
{
    Builder b;
    const uint64_t base = 0x7e0000000000;
    b.add(TraceAction::SegmentMap, base, 8 << 20);                 // 0
    b.add(TraceAction::SegmentMap, base + (8 << 20), 4 << 20);     // 1
    b.add(TraceAction::SegmentUnmap, base + (2 << 20), 2 << 20);   // 2: a hole in the first range
    b.add(TraceAction::SegmentUnmap, 0x7d0000000000, 2 << 20);     // 3: mapped before the window
    const MemoryTimeline tl = replayDevice(b.dev);
    const AllocatorHistory h(b.dev, tl);
    CHECK(h.stateAt(tl, 1).reserved == 14 << 20); // the range mapped before the window too
    const AllocatorState s2 = h.stateAt(tl, 2);
    CHECK(s2.reserved == 12 << 20);
    // Before the window's range, the piece before the hole, and the piece after it joined
    // with the second map: adjacent mapped pages are one range to the allocator.
    CHECK(s2.segments.size() == 3);
    CHECK(h.stateAt(tl, -1).reserved == 2 << 20);
    CHECK(h.stateAt(tl, 3).reserved == 10 << 20);
}

TEST_CASE("Expandable segments: a block over many mapped ranges stays whole", "[allocator]")
{
    // Issue 27: one 10 MiB tensor on five 2 MiB segment_map pages was cut at the first page
    // and the other four counted as cached free, more than the failing request needed.
    Builder b;
    const uint64_t base = 0x7e0000000000;
    for (int i = 0; i < 6; ++i)
        b.add(TraceAction::SegmentMap, base + uint64_t(i) * (2 << 20), 2 << 20); // 0..5
    b.add(TraceAction::Alloc, base, 10 << 20);                                     // 6
    const MemoryTimeline tl = replayDevice(b.dev);
    const AllocatorHistory h(b.dev, tl);
    const AllocatorState st = h.stateAt(tl, 6);
    CHECK(st.reserved == 12 << 20);
    CHECK(st.segments.size() == 1);
    CHECK(st.allocatedBlocks == 10 << 20);
    CHECK(st.inactive == 2 << 20);
    CHECK(st.largestFree == 2 << 20);
}

namespace {

/// The reconstructed state adds up at `e`: blocks tile the segments, and the block bytes
/// less the rounding are the allocated curve (what `analyze` and `state` both print).
void checkStateAddsUp(const AllocatorState& st, const MemoryTimeline& tl, int64_t e)
{
    if (e >= 0) {
        REQUIRE(st.reserved == tl.reserved[size_t(e)]);
        REQUIRE(st.allocated == tl.allocated[size_t(e)]);
    }
    REQUIRE(st.allocatedBlocks + st.pendingFree + st.inactive == st.reserved);
    REQUIRE(st.allocatedBlocks + st.pendingFree - st.internal == st.allocated - st.unplacedBytes);
}

} // namespace

TEST_CASE("The allocator state adds up at every event of every real file and fixture", "[allocator][real]")
{
    std::vector<std::string> files;
    for (const char* name : {"pt27_kk_memory_ctx128_fullstep.pickle", "pt27_silmont_mem_snapshot.pickle",
                             "pt20_yiyi_1.3b_snapshot.pickle", "pt20_yiyi_oom_snapshot.pickle",
                             "pt21_ftcourse_memory_snapshot.pickle"})
        files.push_back(std::string(HEADROOM_REAL_TRACES_DIR) + "/" + name);
    for (const char* name : {"expandable.pickle", "oom.pickle", "multi_device.pickle", "private_pool.pickle",
                             "ring_wrapped.pickle"})
        files.push_back(std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/" + name);
    int64_t states = 0;
    for (const std::string& file : files) {
        auto trace = Loader::load(file);
        for (size_t d = 0; d < trace->timelines.size(); ++d) {
            const MemoryTimeline& tl = trace->timelines[d];
            const DeviceData& dev = trace->snapshot.devices[d];
            const AllocatorHistory h(dev, tl);
            for (int64_t e = -1; e < int64_t(dev.trace.count()); ++e) {
                INFO(file << " device " << dev.device << " event " << e);
                checkStateAddsUp(h.stateAt(tl, e), tl, e);
                ++states;
            }
        }
    }
    CHECK(states > 25000); // every event of each file, not a sample
}

TEST_CASE("The recorded state is the snapshot's blocks, exactly", "[allocator][real]")
{
    auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const DeviceData& dev = trace->snapshot.devices[0];
    const AllocatorState st = recordedAllocatorState(dev);
    CHECK(st.recorded);
    CHECK(st.event == int64_t(dev.trace.count()) - 1);
    CHECK(st.segments.size() == dev.segments.size());
    CHECK(st.blocks.size() == dev.blocks.size());
    int64_t reserved = 0;
    for (const Segment& s : dev.segments)
        reserved += s.totalSize;
    CHECK(st.reserved == reserved);
    CHECK(st.allocatedBlocks + st.pendingFree + st.inactive == st.reserved);
    for (size_t i = 1; i < st.segments.size(); ++i)
        CHECK(st.segments[i - 1].address < st.segments[i].address);
}

TEST_CASE("By-allocation bands: the largest allocations stacked by birth over the merged small ones", "[bands][real]")
{
    auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const MemoryTimeline& tl = trace->timelines[0];
    const auto n = int64_t(tl.allocated.size());
    const AllocationBands bands(tl, 200);
    CHECK(bands.bandCount() == 200);
    int64_t bigger = 0;
    for (const Allocation& a : tl.allocations)
        bigger += a.size > bands.threshold();
    CHECK(bigger < 200);

    // 700 columns over the whole run, and a zoomed window of 50 columns.
    for (auto [from, to, cols] : {std::tuple<int64_t, int64_t, int64_t>{0, n, 700}, {19000, 19341, 50}}) {
        std::vector<int64_t> bounds;
        for (int64_t c = 0; c <= cols; ++c)
            bounds.push_back(from + (to - from) * c / cols);
        const BandColumns bc = bands.layout(tl, bounds);
        REQUIRE(bc.columns() == size_t(cols));
        for (size_t c = 0; c < bc.columns(); ++c) {
            const int64_t e = bc.events[c];
            INFO("column " << c << " event " << e);
            // The column's event is its bucket's highest point.
            for (int64_t k = bounds[c]; k < bounds[c + 1]; ++k)
                REQUIRE(tl.allocated[size_t(e)] >= tl.allocated[size_t(k)]);
            // Exactly the band allocations alive at the event, stacked by birth, no gaps.
            const std::vector<uint32_t> live = bruteLive(tl, e);
            std::vector<uint32_t> expected;
            for (uint32_t i : live)
                if (tl.allocations[i].size >= bands.threshold())
                    expected.push_back(i);
            std::vector<uint32_t> got;
            int64_t expectBottom = bc.small[c];
            for (uint32_t s = bc.offsets[c]; s < bc.offsets[c + 1]; ++s) {
                got.push_back(bc.slices[s].allocation);
                REQUIRE(bc.slices[s].bottom == expectBottom);
                expectBottom += tl.allocations[bc.slices[s].allocation].size;
            }
            // Every live allocation above the threshold has its band; ties at the threshold
            // may go either way (the largest maxBands are chosen, not all of equal size).
            std::vector<uint32_t> sortedGot = got;
            std::sort(sortedGot.begin(), sortedGot.end());
            for (uint32_t i : expected) {
                if (tl.allocations[i].size > bands.threshold())
                    REQUIRE(std::binary_search(sortedGot.begin(), sortedGot.end(), i));
            }
            for (uint32_t i : got)
                REQUIRE(std::binary_search(live.begin(), live.end(), i));
            for (size_t k = 1; k < got.size(); ++k) {
                const Allocation& a = tl.allocations[got[k - 1]];
                const Allocation& b = tl.allocations[got[k]];
                REQUIRE((a.start < b.start || (a.start == b.start && got[k - 1] < got[k])));
            }
            REQUIRE(bc.small[c] + (expectBottom - bc.small[c]) == bc.total[c]);
            REQUIRE(bc.total[c] == tl.allocated[size_t(e)]);
            // Hit testing finds the band under a y value.
            if (!got.empty()) {
                const BandSlice& mid = bc.slices[bc.offsets[c]];
                const BandSlice* hit = bc.sliceAt(tl, c, mid.bottom + tl.allocations[mid.allocation].size / 2);
                REQUIRE(hit);
                CHECK(hit->allocation == mid.allocation);
            }
            CHECK(bc.sliceAt(tl, c, bc.total[c] + 1) == nullptr);
        }
    }
}
