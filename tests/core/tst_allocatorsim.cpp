// SPDX-License-Identifier: MIT
// The caching-allocator simulation: each rule of PyTorch's allocator on its own,
// the real snapshots reproduced under their recorded setting, and a synthetic OOM that
// expandable segments avoid.
#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/replay/allocatorreplay.h"
#include "core/replay/allocatorsim.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace headroom;

namespace {

constexpr int64_t MiB = 1 << 20;

/// A device with a capacity that hands out segments at increasing addresses.
class TestMemory final : public DeviceMemory {
public:
    int64_t capacity = 0;
    uint64_t next = 0x10000000;
    int mallocs = 0;
    bool malloc(int64_t size, int64_t reserved, int64_t, uint64_t& addr) override
    {
        ++mallocs;
        if (capacity > 0 && reserved + size > capacity)
            return false;
        addr = next;
        next += uint64_t(size) + (64u << 20);
        return true;
    }
    bool map(int64_t size, int64_t reserved) override { return capacity <= 0 || reserved + size <= capacity; }
    uint64_t reserveAddressSpace(int64_t) override
    {
        const uint64_t at = 0x100000000000ull + (uint64_t(m_spaces++) << 41);
        return at;
    }
    int64_t allowedMaximum() const override { return capacity; }

private:
    int m_spaces = 0;
};

AllocatorConfig conf(const char* text)
{
    std::string error;
    auto c = AllocatorConfig::parse(text, &error);
    INFO(error);
    REQUIRE(c);
    return *c;
}

std::vector<TraceAction> actions(AllocatorSim& sim)
{
    std::vector<TraceAction> out;
    for (const auto& e : sim.events())
        out.push_back(e.action);
    sim.events().clear();
    return out;
}

} // namespace

TEST_CASE("Allocator config: PYTORCH_CUDA_ALLOC_CONF and the recorded settings", "[allocsim]")
{
    const AllocatorConfig c = conf("expandable_segments:True,max_split_size_mb:512,garbage_collection_threshold:0.6");
    CHECK(c.expandableSegments);
    CHECK(c.maxSplitSize == 512 * MiB);
    CHECK(c.garbageCollectionThreshold == Approx(0.6));
    CHECK(conf("max_split_size_mb:4").maxSplitSize == 20 * MiB); // raised to the 20 MiB segment
    const AllocatorConfig d = conf("roundup_power2_divisions:[256:1,512:2,>:4]");
    CHECK(d.divisionsFor(100 * MiB) == 1);  // the first entry covers the smaller sizes
    CHECK(d.divisionsFor(600 * MiB) == 2);
    CHECK(d.divisionsFor(3000 * MiB) == 4);
    CHECK(conf("roundup_power2_divisions:4").divisionsFor(3 * MiB) == 4);
    std::string error;
    CHECK_FALSE(AllocatorConfig::parse("expandable_segments:maybe", &error));
    CHECK(error.find("expandable_segments") != std::string::npos);
    CHECK_FALSE(AllocatorConfig::parse("max_split_size:5", &error));
    CHECK_FALSE(AllocatorConfig::parse("roundup_power2_divisions:3", &error));
    CHECK(AllocatorConfig::parse(c.text()).value() == c);

    bool found = false;
    const AllocatorConfig r = AllocatorConfig::fromSnapshot(
        {{"PYTORCH_CUDA_ALLOC_CONF", ""}, {"max_split_size", "-1"}, {"garbage_collection_threshold", "0.0"},
         {"expandable_segments", "True"}, {"roundup_power2_divisions", "{'1': 0, '2': 4, '4': 0}"}},
        &found);
    CHECK(found);
    CHECK(r.expandableSegments);
    CHECK(r.maxSplitSize == AllocatorConfig::kUnlimited);
    CHECK(r.divisionsFor(3 * MiB) == 4);
    CHECK(AllocatorConfig::fromSnapshot({{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128"}}).maxSplitSize == 128 * MiB);
    AllocatorConfig::fromSnapshot({}, &found);
    CHECK_FALSE(found);
}

TEST_CASE("Allocator sim: rounding and segment sizes", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim({}, mem);
    CHECK(sim.roundSize(1) == 512);
    CHECK(sim.roundSize(512) == 512);
    CHECK(sim.roundSize(513) == 1024);
    CHECK(AllocatorSim::allocationSize(1 * MiB) == 2 * MiB);       // small pool
    CHECK(AllocatorSim::allocationSize(1 * MiB + 512) == 20 * MiB); // 1-10 MiB share 20 MiB
    CHECK(AllocatorSim::allocationSize(10 * MiB) == 10 * MiB);
    CHECK(AllocatorSim::allocationSize(11 * MiB + 1) == 12 * MiB); // rounded up to 2 MiB

    TestMemory mem4;
    AllocatorSim four(conf("roundup_power2_divisions:4"), mem4);
    CHECK(four.roundSize(1200 * 1024) == 1280 * 1024); // 1024, 1280, 1536, 1792 KiB steps
    CHECK(four.roundSize(1024 * 1024) == 1024 * 1024); // a power of two stays
    CHECK(four.roundSize(1000) == 1024);               // below 512 * divisions: plain rounding
}

TEST_CASE("Allocator sim: pool choice and split remainders", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim({}, mem);
    // Small pool: a 2 MiB segment, split while the rest is >= 512 bytes.
    const int32_t a = sim.malloc(1000, 0);
    CHECK(sim.blockSize(a) == 1024);
    REQUIRE(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc});
    const int32_t b = sim.malloc(1 * MiB, 0);
    CHECK(sim.address(b) == sim.address(a) + 1024); // best fit: the remainder of the same segment
    CHECK(actions(sim).empty());
    // Large pool: a 20 MiB segment for 5 MiB; the 15 MiB rest is split off (> 1 MiB).
    const int32_t c = sim.malloc(5 * MiB, 0);
    CHECK(sim.blockSize(c) == 5 * MiB);
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc});
    CHECK(sim.reserved() == 22 * MiB);
    // 14.5 MiB out of the 15 MiB rest leaves 0.5 MiB: not split, the block keeps it.
    const int32_t d = sim.malloc(14 * MiB + 512 * 1024, 0);
    CHECK(sim.address(d) == sim.address(c) + uint64_t(5 * MiB));
    CHECK(sim.blockSize(d) == 15 * MiB);
    CHECK(actions(sim).empty());
    // Another stream does not share the cache.
    sim.free(b);
    const int32_t e = sim.malloc(1000, 7);
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc});
    CHECK(sim.address(e) != sim.address(b));
}

TEST_CASE("Allocator sim: coalescing on free and best fit by size then address", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim({}, mem);
    const int32_t a = sim.malloc(4 * MiB, 0);
    const int32_t b = sim.malloc(4 * MiB, 0);
    const int32_t c = sim.malloc(4 * MiB, 0);
    const uint64_t base = sim.address(a);
    CHECK(sim.address(c) == base + uint64_t(8 * MiB));
    sim.free(a);
    sim.free(b); // merges with a: one 8 MiB free block at the base
    CHECK(sim.largestFree() == 8 * MiB);
    const int32_t d = sim.malloc(6 * MiB, 0); // the 8 MiB block fits better than the 8 MiB tail? equal: lower address
    CHECK(sim.address(d) == base);
    sim.free(d);
    sim.free(c); // everything merges back into the 20 MiB segment
    CHECK(sim.largestFree() == 20 * MiB);
    CHECK(sim.cachedFree() == 20 * MiB);
    sim.emptyCache();
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc, TraceAction::SegmentFree});
    CHECK(sim.reserved() == 0);
}

TEST_CASE("Allocator sim: max_split_size keeps oversize blocks whole", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim(conf("max_split_size_mb:64"), mem);
    const int32_t big = sim.malloc(100 * MiB, 0);
    sim.free(big);
    actions(sim);
    // A small request may not take the oversize cached block: a new segment.
    const int32_t small = sim.malloc(30 * MiB, 0);
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc});
    CHECK(sim.address(small) != sim.address(big));
    // An oversize request takes a cached oversize block within 20 MiB of it, unsplit.
    const int32_t again = sim.malloc(90 * MiB, 0);
    CHECK(actions(sim).empty());
    CHECK(sim.blockSize(again) == 100 * MiB);
    sim.free(again);
    // ...but not one 20 MiB or more larger.
    sim.malloc(70 * MiB, 0);
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc});
}

TEST_CASE("Allocator sim: cached blocks are freed and the request retried before an OOM", "[allocsim]")
{
    TestMemory mem;
    mem.capacity = 100 * MiB;
    AllocatorSim sim({}, mem);
    const int32_t a = sim.malloc(60 * MiB, 0);
    sim.free(a); // 60 MiB cached
    actions(sim);
    const int32_t b = sim.malloc(70 * MiB, 0); // 60 + 70 > 100: release the cache, retry
    REQUIRE(b != AllocatorSim::kNone);
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentFree, TraceAction::SegmentAlloc});
    CHECK(sim.reserved() == 70 * MiB);
    CHECK(sim.malloc(40 * MiB, 0) == AllocatorSim::kNone); // nothing left to release: OOM

    // With max_split_size, oversize cached blocks go first, only as many as needed.
    TestMemory mem2;
    mem2.capacity = 200 * MiB;
    AllocatorSim split(conf("max_split_size_mb:40"), mem2);
    const int32_t x = split.malloc(50 * MiB, 0);
    const int32_t y = split.malloc(60 * MiB, 0);
    const int32_t z = split.malloc(30 * MiB, 0);
    split.free(x);
    split.free(y);
    split.free(z);
    actions(split);
    // 140 + 100 > 200 and no single oversize block reaches 100 MiB: the largest go first
    // (60, then 50 MiB) until 100 MiB are freed; the 30 MiB block stays.
    REQUIRE(split.malloc(100 * MiB, 0) != AllocatorSim::kNone);
    CHECK(actions(split) ==
          std::vector<TraceAction>{TraceAction::SegmentFree, TraceAction::SegmentFree, TraceAction::SegmentAlloc});
    CHECK(split.reserved() == 130 * MiB);
}

TEST_CASE("Allocator sim: garbage collection frees old cached blocks past the threshold", "[allocsim]")
{
    TestMemory mem;
    mem.capacity = 100 * MiB;
    AllocatorSim sim(conf("garbage_collection_threshold:0.5"), mem);
    const int32_t a = sim.malloc(40 * MiB, 0);
    const int32_t b = sim.malloc(30 * MiB, 0);
    sim.free(a);
    sim.free(b);
    actions(sim);
    // 70 MiB reserved > 50 MiB: a request the cache cannot serve first collects unused blocks.
    REQUIRE(sim.malloc(50 * MiB, 0) != AllocatorSim::kNone);
    const auto ev = actions(sim);
    CHECK(ev.front() == TraceAction::SegmentFree);
    CHECK(ev.back() == TraceAction::SegmentAlloc);
}

TEST_CASE("Allocator sim: expandable segments map pages and unmap them", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim(conf("expandable_segments:True"), mem);
    const int32_t a = sim.malloc(30 * MiB, 0);
    auto ev = sim.events();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].action == TraceAction::SegmentMap);
    CHECK(ev[0].size == 40 * MiB); // 20 MiB pages in the large pool
    actions(sim);
    // The mapped rest serves the next request; the segment grows at its end.
    const int32_t b = sim.malloc(8 * MiB, 0);
    CHECK(actions(sim).empty());
    CHECK(sim.address(b) == sim.address(a) + uint64_t(30 * MiB));
    const int32_t c = sim.malloc(25 * MiB, 0);
    ev = sim.events();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].action == TraceAction::SegmentMap);
    CHECK(ev[0].size == 40 * MiB); // 2 MiB left mapped + 40 MiB >= 25 MiB
    CHECK(sim.address(c) == sim.address(b) + uint64_t(8 * MiB));
    actions(sim);
    CHECK(sim.reserved() == 80 * MiB);
    // Small requests use 2 MiB pages of their own segment.
    sim.malloc(1000, 0);
    ev = sim.events();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].size == 2 * MiB);
    actions(sim);
    // Freeing and emptying the cache unmaps whole free pages only.
    sim.free(c);
    sim.emptyCache();
    ev = sim.events();
    REQUIRE(!ev.empty());
    CHECK(ev[0].action == TraceAction::SegmentUnmap);
    CHECK(ev[0].size == 40 * MiB); // pages 3-4; page 2 still holds b
    CHECK(sim.reserved() == 42 * MiB);
}

TEST_CASE("Allocator sim: private pools are kept apart", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim({}, mem);
    const int32_t g = sim.malloc(5 * MiB, 0, 1); // a graph's pool
    sim.free(g);
    actions(sim);
    sim.malloc(5 * MiB, 0); // the default pool cannot use the graph's cached block
    CHECK(actions(sim) == std::vector<TraceAction>{TraceAction::SegmentAlloc});
    sim.emptyCache(); // and empty_cache leaves the graph's memory alone
    CHECK(sim.reserved() == 40 * MiB);
}

TEST_CASE("Allocator sim: a seeded segment and placement at a recorded address", "[allocsim]")
{
    TestMemory mem;
    AllocatorSim sim({}, mem);
    const auto ids = sim.addSegment(0x1000000, 0, false, 0,
                                    {{0, 4 * MiB, true, 4 * MiB}, {0, 12 * MiB, false, 0}, {0, 4 * MiB, true, 3 * MiB}});
    REQUIRE(ids.size() == 2);
    CHECK(sim.reserved() == 20 * MiB);
    CHECK(sim.largestFree() == 12 * MiB);
    const int32_t at = sim.allocateAt(0x1000000 + 6 * MiB, 2 * MiB, 0);
    REQUIRE(at != AllocatorSim::kNone);
    CHECK(sim.address(at) == 0x1000000 + uint64_t(6 * MiB));
    CHECK(sim.largestFree() == 8 * MiB); // 2 MiB stay free before it, the 8 MiB rest is split off
    CHECK(sim.allocateAt(0x9000000, 1 * MiB, 0) == AllocatorSim::kNone);
    sim.free(ids[0]);
    sim.free(at);
    sim.free(ids[1]);
    CHECK(sim.largestFree() == 20 * MiB);
    CHECK(sim.events().empty()); // seeding and placement are not allocator events
}

TEST_CASE("Allocator replay reproduces the real snapshots' segment events", "[allocsim][real]")
{
    std::vector<std::string> files;
    for (const auto& dir : {std::string(HEADROOM_REAL_TRACES_DIR), std::string(HEADROOM_SOURCE_DIR) + "/../shared/real_traces/gpu_series"})
        if (std::filesystem::is_directory(dir))
            for (const auto& e : std::filesystem::directory_iterator(dir))
                if (e.path().extension() == ".pickle")
                    files.push_back(e.path().string());
    REQUIRE(files.size() >= 5);
    for (const std::string& f : files) {
        auto trace = Loader::load(f);
        for (const DeviceData& dev : trace->snapshot.devices) {
            const MemoryTimeline* tl = trace->timelineFor(dev.device);
            if (!tl || dev.trace.count() == 0)
                continue;
            const AllocatorReplayResult r = replayAllocator(trace->snapshot, dev, *tl);
            INFO(f << " device " << dev.device << ": " << r.segmentEventsMatched << "/" << r.segmentEventsRecorded
                   << ", reserved difference " << r.maxReservedDifference
                   << (r.firstDivergence ? ", first divergence: " + r.firstDivergence->why : std::string()));
            CHECK(r.segmentMatchShare() >= 0.99);
            CHECK(r.reservedDifferenceShare() <= 0.01);
            CHECK(r.placementDivergences == 0);
        }
    }
}

TEST_CASE("Allocator replay of a fixture: bad input diverges and goes on", "[allocsim]")
{
    auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/ring_wrapped.pickle");
    const DeviceData& dev = trace->snapshot.devices.front();
    const AllocatorReplayResult r = replayAllocator(trace->snapshot, dev, *trace->timelineFor(dev.device));
    CHECK(r.events == int64_t(dev.trace.count()));
    // A trace whose frees match nothing, with an alloc at a live address: no crash, counted.
    DeviceData bad = dev;
    bad.trace.clear();
    bad.segments.clear();
    bad.blocks.clear();
    bad.trace.append({TraceAction::FreeCompleted, 0x5000, 100, 0, TraceEvents::kNoTime, 0});
    bad.trace.append({TraceAction::SegmentAlloc, 0x7000000, 2 * MiB, 0, TraceEvents::kNoTime, 0});
    bad.trace.append({TraceAction::Alloc, 0x7000000, 100, 0, TraceEvents::kNoTime, 0});
    bad.trace.append({TraceAction::Alloc, 0x7000000, 100, 0, TraceEvents::kNoTime, 0});
    bad.trace.append({TraceAction::Alloc, 0x9999999, 3 * MiB, 0, TraceEvents::kNoTime, 0}); // no segment recorded
    bad.trace.append({TraceAction::SegmentFree, 0x1234, 20 * MiB, 0, TraceEvents::kNoTime, 0});
    const MemoryTimeline tl = replayDevice(bad);
    const AllocatorReplayResult b = replayAllocator(trace->snapshot, bad, tl);
    CHECK(b.initialStateReconstructed); // the first free is of memory from before the window
    CHECK(b.unmatchedFrees >= 1);       // the second alloc at a live address
    REQUIRE(b.firstDivergence);
    CHECK(b.firstDivergence->event >= 3);
    CHECK(b.segmentEventsRecorded == 2);
}

TEST_CASE("Allocator replay: expandable segments avoid a synthetic fragmentation OOM", "[.][allocsim_gen]")
{
    // tests/CMakeLists.txt generates it (tools/gen_snapshot.py --oom): an outlier batch whose
    // 2 GiB request fails with 4.5 GiB cached in blocks too small for it.
    auto trace = Loader::load(std::string(HEADROOM_GEN_DIR) + "/oom.pickle");
    const DeviceData& dev = trace->snapshot.devices.front();
    const MemoryTimeline& tl = *trace->timelineFor(dev.device);
    const AllocatorReplayResult rec = replayAllocator(trace->snapshot, dev, tl);
    CHECK(rec.segmentMatchShare() >= 0.99);
    CHECK(rec.maxReservedDifference == 0);
    AllocatorReplayOptions same;
    same.config = AllocatorConfig{};
    const AllocatorReplayResult sameRun = replayAllocator(trace->snapshot, dev, tl, same);
    REQUIRE(sameRun.oomAvoided);
    CHECK_FALSE(*sameRun.oomAvoided); // the recorded setting fails where the recording failed
    REQUIRE(sameRun.firstSimulatedOom);
    CHECK(sameRun.firstSimulatedOom->event == sameRun.recordedOomEvent);
    CHECK(sameRun.firstSimulatedOom->cachedFree > sameRun.firstSimulatedOom->size); // fragmentation
    AllocatorReplayOptions exp;
    exp.config = conf("expandable_segments:True");
    const AllocatorReplayResult e = replayAllocator(trace->snapshot, dev, tl, exp);
    REQUIRE(e.oomAvoided);
    CHECK(*e.oomAvoided);
    CHECK_FALSE(e.firstSimulatedOom);
    CHECK(e.reservedPeak <= e.capacity);
}

// A benchmark, not a timed test (hidden; `tst_core "[.benchmark]"`): the replay against the
// import of the same file in the same run. HEADROOM_REPLAY_BENCH_FILE picks the file (tools/
// bench.py's 1M-event snapshot); the default is the largest real snapshot.
TEST_CASE("Allocator replay speed", "[.benchmark][allocsim]")
{
    const char* env = std::getenv("HEADROOM_REPLAY_BENCH_FILE");
    const std::string file = env ? env : std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle";
    const auto t0 = std::chrono::steady_clock::now();
    auto trace = Loader::load(file);
    const auto t1 = std::chrono::steady_clock::now();
    size_t events = 0;
    for (const DeviceData& dev : trace->snapshot.devices)
        if (const MemoryTimeline* tl = trace->timelineFor(dev.device)) {
            events += dev.trace.count();
            CHECK(replayAllocator(trace->snapshot, dev, *tl).events == int64_t(dev.trace.count()));
        }
    const auto t2 = std::chrono::steady_clock::now();
    const double load = std::chrono::duration<double>(t1 - t0).count();
    const double replay = std::chrono::duration<double>(t2 - t1).count();
    std::printf("allocator replay: %.3f s for %zu events (%.3f s per 1M), %.2f of the import (%.3f s)\n", replay, events,
                events ? replay * 1e6 / double(events) : 0.0, replay / load, load);
}

TEST_CASE("A CPU recording's reserved memory is not recorded: the replay runs free and holds the allocated peak",
          "[allocsim]")
{
    // The CPU recorder records tensors, not a caching allocator's segments. Following that
    // recording placed every allocation "elsewhere than recorded" and outside any segment: the
    // simulated reserved peak read 2 MiB under an allocated peak of 6.78 MiB.
    const auto cpu = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/decoder_base.pickle");
    const MemoryTimeline& tl = cpu->timelines[0];
    CHECK_FALSE(tl.reservedRecorded);
    const AllocatorReplayResult r = replayAllocator(cpu->snapshot, cpu->snapshot.devices[0], tl);
    CHECK_FALSE(r.followedRecording);
    CHECK(r.placementDivergences == 0);
    CHECK(r.reservedPeak >= tl.peakAllocated);
    CHECK(r.reservedPeak == 4 * AllocatorSim::kSmallBuffer); // four 2 MiB small-pool segments
    // Nor is fragmentation read from reservations nobody recorded.
    const std::vector<Finding> fs = diagnose(*cpu, 0, analyzeDevice(*cpu, 0), {});
    CHECK(std::none_of(fs.begin(), fs.end(), [](const Finding& f) { return f.kind == "fragmentation"; }));
    // A GPU snapshot's is recorded, and followed under its own setting.
    const auto gpu = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    CHECK(gpu->timelines[0].reservedRecorded);
    CHECK(replayAllocator(gpu->snapshot, gpu->snapshot.devices[0], gpu->timelines[0]).followedRecording);
}
