// SPDX-License-Identifier: MIT
// Activation checkpointing as a transformation of the measured history (docs/whatif-model.md,
// "Checkpointing"): on a history built by hand, and on CPU recordings of real PyTorch (the
// llama family recorded with and without torch.utils.checkpoint).
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/replay/checkpointplan.h"
#include "core/whatif/projection/projectedtimeline.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

/// Two blocks of two saved tensors (a 100-byte internal one, a 10-byte output), a 1-byte head,
/// then the backward in reverse. Events: 0 block 0 internal, 1 block 0 output, 2 block 1
/// internal, 3 block 1 output, 4 head, 5 head freed, 6 block 1 output freed, 7 block 1
/// internal freed, 8 block 0 output freed, 9 block 0 internal freed.
MemoryTimeline twoBlocks()
{
    MemoryTimeline tl;
    auto add = [&](int64_t size, int64_t start, int64_t end, uint32_t stack) {
        Allocation a;
        a.size = size;
        a.start = start;
        a.end = end;
        a.stack = stack;
        tl.allocations.push_back(a);
    };
    add(100, 0, 9, 1);
    add(10, 1, 8, 2);
    add(100, 2, 7, 1);
    add(10, 3, 6, 2);
    add(1, 4, 5, 3);
    int64_t live = 0;
    for (int64_t e = 0; e < 10; ++e) {
        for (const Allocation& a : tl.allocations)
            live += (a.start == e ? a.size : 0) - (a.end == e ? a.size : 0);
        tl.allocated.push_back(live);
    }
    return tl;
}

} // namespace

TEST_CASE("Checkpointing frees a block's saved tensors after its forward and makes them again for its backward",
          "[whatif][checkpoint]")
{
    const MemoryTimeline tl = twoBlocks();
    const CheckpointPlan plan = planCheckpointing(tl, {0, 1, 2, 3, 4}, 0, 9);
    REQUIRE(plan.blocks == 2);
    CHECK(plan.runs == 1);
    CHECK(plan.largestOutput == 10);
    // Block 0's internal tensor: freed when its output is made (event 1), made again when block
    // 1's backward has released its tensors (event 7). Block 1's: freed at 3, made again after
    // the head's backward (event 5).
    std::vector<std::tuple<int64_t, uint32_t, bool>> moves;
    for (const auto& m : plan.moves)
        moves.emplace_back(m.event, m.alloc, m.end);
    const std::vector<std::tuple<int64_t, uint32_t, bool>> expected{
        {1, 0, true}, {3, 2, true}, {5, 2, false}, {7, 0, false}};
    CHECK(moves == expected);
    CHECK(plan.coverage == Approx(220.0 / 221.0));
}

TEST_CASE("A block's saved tensors without a backward are not moved", "[whatif][checkpoint]")
{
    MemoryTimeline tl = twoBlocks();
    for (Allocation& a : tl.allocations)
        a.end = Allocation::kStillAlive; // an OOM cut the history in the forward
    CHECK(planCheckpointing(tl, {0, 1, 2, 3, 4}, 0, 9).empty());
}

TEST_CASE("Every disjoint repeat of the forward is a run of blocks", "[whatif][checkpoint]")
{
    // an encoder of two blocks (1, 2, 3), a decoder of three (5, 6), the head
    const std::vector<uint64_t> keys{9, 1, 2, 3, 1, 2, 3, 5, 6, 5, 6, 5, 6, 7};
    const std::vector<int64_t> bytes(keys.size(), 10);
    std::vector<RepeatedBlocks> runs = findRepeatedRuns(keys, bytes);
    REQUIRE(runs.size() == 2);
    std::sort(runs.begin(), runs.end(), [](const auto& x, const auto& y) { return x.start < y.start; });
    CHECK((runs[0].start == 1 && runs[0].period == 3 && runs[0].count == 2));
    CHECK((runs[1].start == 7 && runs[1].period == 2 && runs[1].count == 3));
}

TEST_CASE("Checkpointing a CPU llama is a replay of its recorded run within 2%", "[whatif][checkpoint][cpu]")
{
    // tests/data/cpu/llama_ckpt.pickle: the same job with torch.utils.checkpoint around each
    // block. The terms priced it at -10.7% (a block's activations and the boundaries, by count).
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto base = Loader::load(dir + "llama_base.pickle");
    auto ckpt = Loader::load(dir + "llama_ckpt.pickle");
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    LeverConfig t = cal.baseline.config;
    t.checkpoint = Checkpointing::Full;
    const Projection p = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(p.replayed);
    CHECK(p.replayCheckpointedBlocks == 2);
    const double measured = double(ckpt->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.02));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
    CHECK(std::any_of(p.notes.begin(), p.notes.end(),
                      [](const std::string& n) { return n.find("checkpointing replayed") != std::string::npos; }));
    // The timeline drawn over the measured one: checkpointed, its highest point in the
    // projected iteration is the projected peak; the requests go through the allocator model.
    const ProjectedTimeline line =
        projectTimeline(cal.baseline, p, base->timelines[0].allocated.size(), AllocatorConfig{});
    REQUIRE(line.hasCurve());
    const CheckpointPlan& plan = cal.baseline.trace->checkpointPlan();
    const auto from = line.allocated.central.begin() + plan.from, to = line.allocated.central.begin() + plan.to + 1;
    CHECK(double(*std::max_element(from, to)) == Approx(p.peakAllocated).epsilon(1e-9));
    REQUIRE(line.simulated);
    CHECK(line.simulated->peak >= int64_t(p.peakAllocated));
    CHECK(line.oomEvent == -1);
    CHECK(line.changes == std::vector<std::string>{"checkpoint=full"});
}

TEST_CASE("The allocator model serves the checkpointed run the peak counts", "[whatif][checkpoint][cpu]")
{
    // tests/data/cpu/ckpt_window.pickle (record_ckpt_window.py): a small, long llama whose
    // activations outweigh its state, two iterations. Checkpointing transforms the plan's
    // iteration only; the first one, untransformed, held every activation, and the allocator
    // model served it too: its reserved peak was there (60.8 MiB at event 447 against 29.7 MiB
    // allocated), and a fake 7B step with offload and checkpointing "did not fit" 80 GiB at
    // 10 GiB allocated, its first forward at 75 GiB. What is alive when the window opens is
    // requested there.
    auto base = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/ckpt_window.pickle");
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    LeverConfig t = cal.baseline.config;
    t.checkpoint = Checkpointing::Full;
    const Projection p = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(p.replayed);
    REQUIRE(p.replayCheckpointedBlocks == 2);
    const ProjectedTimeline line =
        projectTimeline(cal.baseline, p, base->timelines[0].allocated.size(), AllocatorConfig{});
    REQUIRE(line.simulated);
    const CheckpointPlan& plan = cal.baseline.trace->checkpointPlan();
    CHECK(line.simulated->peakEvent >= plan.from);
    CHECK(line.simulated->peakEvent <= plan.to);
    CHECK(line.simulated->peak >= int64_t(p.peakAllocated));
    CHECK(line.simulated->peak < 60 * 1024 * 1024);
}

TEST_CASE("Blocks that cover too little of the forward leave checkpointing to the terms", "[whatif][checkpoint][cpu]")
{
    // The CPU convnet recorded without modules: its six blocks of three widths repeat only in
    // pairs by their stacks (63% of its saved bytes): the rest would keep everything it saved.
    auto base = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/convnet_base.pickle");
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    CHECK(cal.baseline.trace->checkpointPlan().coverage < kMinCheckpointCoverage);
    LeverConfig t = cal.baseline.config;
    t.checkpoint = Checkpointing::Full;
    CHECK_FALSE(project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib")).replayed);
}

TEST_CASE("The layers a recorder named are the checkpointed blocks", "[whatif][checkpoint][cpu]")
{
    // The same convnet recorded with its modules (headroom_tensor): the six children of
    // blocks.blocks are its layers whatever their widths, the stem's conv, norm and activation
    // (leaf modules of a Sequential) are not. Checked against its checkpointed recording.
    auto base = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/convnet_base_shapes.pickle");
    auto ckpt = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/convnet_ckpt.pickle");
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    const CheckpointPlan& plan = cal.baseline.trace->checkpointPlan();
    CHECK(plan.byModule);
    CHECK(plan.blocks == 6);
    CHECK(plan.runs == 1);
    CHECK(plan.coverage >= kMinCheckpointCoverage);
    // They are the model's layer count too (the terms' checkpoint boundaries, a gathered layer).
    CHECK(cal.baseline.layers == 6);
    CHECK_FALSE(cal.baseline.layersGuessed);
    LeverConfig t = cal.baseline.config;
    t.checkpoint = Checkpointing::Full;
    const Projection p = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(p.replayed);
    const double measured = double(ckpt->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
}
