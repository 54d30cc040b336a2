// SPDX-License-Identifier: MIT
// Memory from before the recording: the parameter set's copies read as weights, optimizer state
// and kept gradients (core/analysis/prerecording.h), on CPU recordings made mid-run
// (tests/data/cpu/record_late.py).
#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/report/analysisreport.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace headroom;

namespace {

std::shared_ptr<const LoadedTrace> lateFile(const std::string& name)
{
    return Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/" + name);
}

/// Bytes alive before the trace and at its end, by category.
std::array<int64_t, kTensorCategoryCount> beforeTrace(const LoadedTrace& t, const DeviceAnalysis& a)
{
    std::array<int64_t, kTensorCategoryCount> out{};
    const MemoryTimeline& tl = t.timelines[0];
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        if (tl.allocations[i].start == Allocation::kBeforeWindow && tl.allocations[i].end == Allocation::kStillAlive)
            out[size_t(a.classes[i].category)] += tl.allocations[i].size;
    return out;
}

const Finding* findingOf(const std::vector<Finding>& fs, const std::string& kind)
{
    const auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.kind == kind; });
    return it == fs.end() ? nullptr : &*it;
}

constexpr size_t idx(TensorCategory c) { return size_t(c); }

} // namespace

TEST_CASE("Recorded after AdamW's first step: the weights and two moments, read from the gradients", "[analysis][prerecording]")
{
    const auto t = lateFile("decoder_late_adamw_mid.pickle");
    const DeviceAnalysis a = analyzeDevice(*t, 0);
    const PreRecording& r = a.preRecording;
    REQUIRE(r.decided());
    CHECK(r.copies == 3);
    CHECK(r.optimizer == "adamw");
    CHECK(r.readings.front() == PreRecordingReading{2, 0, 0});
    const auto bytes = beforeTrace(*t, a);
    // Every copy of the parameter set counted once: weights once, the moments twice (plus a
    // 512-byte step counter per parameter), nothing left as "parameter" twice over.
    CHECK(bytes[idx(TensorCategory::Parameter)] == r.weightBytes);
    CHECK(bytes[idx(TensorCategory::OptimizerState)] >= 2 * r.weightBytes);
    CHECK(bytes[idx(TensorCategory::Gradient)] == 0);
    CHECK(bytes[idx(TensorCategory::Unknown)] == 0);
    const std::vector<Finding> fs = diagnose(*t, 0, a, {});
    const Finding* f = findingOf(fs, "before_recording");
    REQUIRE(f);
    CHECK(f->verdict.find("optimizer state") != std::string::npos);
    const nlohmann::json j = analysisJson(*t, std::nullopt);
    CHECK(j["devices"][0]["before_recording"]["decided"] == true);
    CHECK(j["devices"][0]["before_recording"]["copies"] == 3);
}

TEST_CASE("Gradients kept across steps: four copies, no gradient born in the trace", "[analysis][prerecording]")
{
    const auto t = lateFile("decoder_late_keep_mid.pickle");
    const DeviceAnalysis a = analyzeDevice(*t, 0);
    const PreRecording& r = a.preRecording;
    REQUIRE(r.decided());
    CHECK(r.copies == 4);
    CHECK(r.readings.front() == PreRecordingReading{2, 1, 0});
    const auto bytes = beforeTrace(*t, a);
    CHECK(bytes[idx(TensorCategory::Gradient)] == r.weightBytes);
    CHECK(bytes[idx(TensorCategory::Parameter)] == r.weightBytes);
}

TEST_CASE("Nothing decides without a backward or an optimizer step: both readings and the band", "[analysis][prerecording]")
{
    const auto t = lateFile("decoder_late_forward_only.pickle");
    const DeviceAnalysis a = analyzeDevice(*t, 0);
    const PreRecording& r = a.preRecording;
    CHECK(r.copies == 3);
    CHECK_FALSE(r.decided());
    // Two moments; one moment and kept gradients; or weights whose sizes repeat (no state).
    REQUIRE(r.readings.size() == 3);
    CHECK(std::count(r.readings.begin(), r.readings.end(), PreRecordingReading{0, 0, 2}) == 1);
    CHECK(r.stateBytesLow() == 0);
    CHECK(r.stateBytesHigh() == 2 * r.weightBytes);
    // Not called optimizer state or gradients: unknown, with the readings beside it.
    const auto bytes = beforeTrace(*t, a);
    CHECK(bytes[idx(TensorCategory::Unknown)] >= 2 * r.weightBytes);
    CHECK(bytes[idx(TensorCategory::OptimizerState)] == 0);
    const std::vector<Finding> fs = diagnose(*t, 0, a, {});
    const Finding* f = findingOf(fs, "before_recording");
    REQUIRE(f);
    CHECK(f->verdict.find(" or ") != std::string::npos);
    CHECK(f->firstMove.find("settled by") != std::string::npos);
}

TEST_CASE("Memory from before the trace that the optimizer's update frees is replaced state, not a gradient",
          "[analysis][prerecording]")
{
    // Two blocks from before the trace, both freed in the optimizer phase: one by zero_grad (a
    // gradient), one by the update itself (state the step replaced, as a mid-run recording shows).
    FrameTable ft;
    const uint32_t main = ft.internFrame("train.py", 1, "main");
    const std::vector<uint32_t> zeroGrad = {ft.internFrame("torch/optim/optimizer.py", 400, "zero_grad"), main};
    const std::vector<uint32_t> update = {ft.internFrame("torch/optim/adamw.py", 300, "_single_tensor_adamw"),
                                          ft.internFrame("torch/optim/adamw.py", 150, "step"), main};
    MemoryTimeline tl;
    tl.allocations.push_back({0x1000, 4096, int32_t(Allocation::kBeforeWindow), 0, ft.internStack(zeroGrad)});
    tl.allocations.push_back({0x2000, 4096, int32_t(Allocation::kBeforeWindow), 1, ft.internStack(update)});
    PhaseAnalysis ph;
    ph.eventPhase = {Phase::Optimizer, Phase::Optimizer};
    ph.spans = {{Phase::Optimizer, 0, 1}};
    std::vector<AllocationClass> classes(2, {TensorCategory::Gradient, CategoryRule::FreedByZeroGrad, Phase::Setup});
    readPreRecording(ft, tl, ph, classes);
    CHECK(classes[0].category == TensorCategory::Gradient);
    CHECK(classes[1].category == TensorCategory::OptimizerState);
    CHECK(classes[1].rule == CategoryRule::FreedByOptimizerUpdate);
}

TEST_CASE("State of its own shape from before the trace: a size no gradient has, computed with in the step",
          "[analysis][prerecording]")
{
    // Recorded after an Adafactor-like optimizer's first step: a weight (its gradient is born in
    // the backward), a factor of its squared gradient (a size no gradient has; the step makes
    // temporaries of that size), and a frozen table (no gradient, nothing of its size in the step).
    FrameTable ft;
    const std::vector<uint32_t> frames = {ft.internFrame("train.py", 1, "main")};
    const uint32_t stack = ft.internStack(frames);
    MemoryTimeline tl;
    const int32_t before = int32_t(Allocation::kBeforeWindow), alive = int32_t(Allocation::kStillAlive);
    tl.allocations.push_back({0x1000, 8192, before, alive, stack}); // the weight
    tl.allocations.push_back({0x3000, 2048, before, alive, stack}); // its row factor
    tl.allocations.push_back({0x4000, 4096, before, alive, stack}); // a frozen table
    tl.allocations.push_back({0x6000, 8192, 0, alive, stack});      // the gradient, born in the backward
    tl.allocations.push_back({0x8000, 2048, 1, 2, stack});          // the step's temporary of the factor's size
    PhaseAnalysis ph;
    ph.eventPhase = {Phase::Backward, Phase::Optimizer, Phase::Optimizer};
    ph.spans = {{Phase::Backward, 0, 0}, {Phase::Optimizer, 1, 2}};
    const AllocationClass pre{TensorCategory::Parameter, CategoryRule::AliveThroughWindow, Phase::Setup};
    std::vector<AllocationClass> classes = {pre, pre, pre,
                                            {TensorCategory::Gradient, CategoryRule::BackwardOutlivesPass, Phase::Backward},
                                            {TensorCategory::Temporary, CategoryRule::SamePhaseTemporary, Phase::Optimizer}};
    readPreRecording(ft, tl, ph, classes);
    CHECK(classes[0].category == TensorCategory::Parameter);
    CHECK(classes[1].category == TensorCategory::OptimizerState);
    CHECK(classes[1].rule == CategoryRule::BeforeWindowStateBySize);
    CHECK(classes[2].category == TensorCategory::Parameter); // frozen: the step never computes at its size
}

TEST_CASE("Buffers of their own do not hide the copies; autocast casts one of them", "[analysis][prerecording][whatif]")
{
    // tests/data/cpu/state_forward_{fp32,amp_bf16}.pickle (record_state_forward.py): a llama's
    // forwards recorded after an AdamW step, its weights and two moments alive before the trace.
    // Its rotary table's sine and cosine (two blocks of one size) kept the counts' divisor at 1:
    // no copies were read, all three sets were weights, and the move to autocast cast every one
    // of them (+19.6%, the band missing). Now three copies, undecided (a forward says nothing of
    // which), and one weight set cast.
    const auto t = lateFile("state_forward_fp32.pickle");
    const DeviceAnalysis a = analyzeDevice(*t, 0);
    const PreRecording& r = a.preRecording;
    CHECK(r.copies == 3);
    CHECK_FALSE(r.decided());
    CHECK(r.weightBytes > 0);
    const auto bytes = beforeTrace(*t, a);
    CHECK(bytes[idx(TensorCategory::Parameter)] < r.weightBytes + 512 * 1024); // one set, and the buffers
    CHECK(bytes[idx(TensorCategory::Unknown)] >= 2 * r.weightBytes);

    const Calibration cal = calibrate(*t, 0, a, {});
    LeverConfig target = cal.baseline.config;
    target.precision = Precision::AmpBf16;
    const Projection p = project(cal.baseline, target, WhatIfConstants{}, *devicePreset("80gib"));
    const auto amp = lateFile("state_forward_amp_bf16.pickle");
    const double measured = double(amp->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.05));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
}

TEST_CASE("A no_grad forward under autocast may peak where its cache is full", "[whatif][prerecording]")
{
    // tests/data/cpu/state_forward_nograd_*.pickle: the same forwards under no_grad. The fp32
    // run peaks with 13 of its 29 Linear calls made; the autocast cache only grows, and where
    // weights outweigh activations the autocast run peaks at the forward's end with every
    // weight's cast. Priced at the fp32 peak's share it was -6.8%, the band missing; the later
    // uses, each with what the forward held there, now find that moment.
    const auto t = lateFile("state_forward_nograd_fp32.pickle");
    const Calibration cal = calibrate(*t, 0, analyzeDevice(*t, 0), {});
    REQUIRE(cal.baseline.forwardOnly);
    REQUIRE(cal.baseline.forwardMoments.size() == 29 * 1);
    LeverConfig target = cal.baseline.config;
    target.precision = Precision::AmpBf16;
    const Projection p = project(cal.baseline, target, WhatIfConstants{}, *devicePreset("80gib"));
    const auto amp = lateFile("state_forward_nograd_amp_bf16.pickle");
    const double measured = double(amp->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
}
