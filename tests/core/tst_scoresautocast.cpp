// SPDX-License-Identifier: MIT
// The attention scores under CUDA's autocast lists on a file without the op graph (a GPU
// snapshot): how many score-sized tensors each call saves, whether a dropout mask is among them,
// and what a no_grad forward holds at its softmax (docs/whatif-model.md, "Precision"; issue 50).
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/scoresautocast.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <string>

using namespace headroom;

namespace {

constexpr int64_t kScore = 4 * 2 * 4 * 64 * 64; // fp32, b 2, 4 heads, sequence 64
constexpr int64_t kLayer = 4 * 2 * 64 * 256;    // a b*s*d activation

/// One attention call's saved tensors after a layer activation, in the order they were made.
void call(std::vector<ScoreTensor>& out, std::initializer_list<int64_t> scores)
{
    out.push_back({kLayer, int64_t(out.size()), false});
    for (int64_t bytes : scores) {
        out.push_back({bytes, int64_t(out.size()), true});
        out.push_back({kScore / 64, int64_t(out.size()), false}); // a row sum: not a layer's
    }
}

std::shared_ptr<const LoadedTrace> cpuFile(const std::string& name)
{
    return Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/" + name);
}

} // namespace

TEST_CASE("What each attention call saves decides the scores' autocast factor", "[whatif][precision]")
{
    std::vector<ScoreTensor> alive;
    SECTION("torch's softmax alone: kept in fp32 beside the matmul's bf16 cast")
    {
        call(alive, {kScore});
        call(alive, {kScore});
        const ScoresReading r = readSavedScores(alive, 64);
        CHECK(r.calls == 2);
        CHECK(r.perCall == 1);
        CHECK(r.factor == Approx(6.0 / 4.0));
    }
    SECTION("softmax and a GPU dropout: its bool mask, a quarter of the scores")
    {
        call(alive, {kScore, kScore / 4, kScore});
        call(alive, {kScore, kScore / 4, kScore});
        const ScoresReading r = readSavedScores(alive, 64);
        CHECK(r.calls == 2);
        CHECK(r.perCall == 2);
        CHECK(r.dropout);
        CHECK(r.factor == Approx(7.0 / 9.0));
    }
    SECTION("an exp and its division (a softmax of the model's own)")
    {
        call(alive, {kScore, kScore});
        const ScoresReading r = readSavedScores(alive, 64);
        CHECK(r.calls == 1);
        CHECK(r.factor == Approx(6.0 / 8.0));
    }
    SECTION("nothing score-sized: nothing read")
    {
        call(alive, {});
        CHECK(readSavedScores(alive, 64).factor == 0);
    }
    CHECK(readSavedScores({}, 64).factor == 0);
}

TEST_CASE("A no_grad forward's scores peak at their softmax under CUDA autocast", "[whatif][precision]")
{
    const ScoresReading r = readForwardScores({{kScore, 0, true}, {kScore, 1, true}, {kLayer, 2, false}});
    CHECK(r.perCall == 2);
    CHECK(r.factor == Approx(10.0 / 8.0)); // the bf16 input, softmax's fp32 copy and fp32 output
    CHECK(r.low == Approx(0.5));            // every one narrowed: the band's low end
    CHECK(r.high == Approx(r.factor));
}

TEST_CASE("Autocast projected from files without the op graph reaches CUDA's run", "[whatif][precision][cpu]")
{
    // tests/data/cpu/record_cuda_autocast_bare.py: fp32 runs naming an 80 GiB GPU and the same
    // runs under CUDA's lists (emulated), both without the recorder's shapes and graph. Before the
    // scores were read, the terms priced them at 7/9 everywhere: -33.3% (decoder_infer, whose
    // peak moves to its softmax) and -10.5% (encdec, whose one saved softmax output stays fp32),
    // both outside their bands.
    for (const char* family : {"decoder_infer", "encdec"}) {
        INFO(family);
        const std::string f(family);
        auto base = cpuFile(f + "_bare_h100.pickle");
        auto amp = cpuFile(f + "_bare_amp_cuda.pickle");
        const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
        CHECK(cal.baseline.scoresAutocast.saved + cal.baseline.scoresAutocast.temps > 0);
        LeverConfig t = cal.baseline.config;
        t.precision = Precision::AmpBf16;
        const Projection p = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
        CHECK_FALSE(p.replayed);
        const double measured = double(amp->timelines[0].peakAllocated);
        CHECK(p.peakAllocated == Approx(measured).epsilon(0.05));
        CHECK(p.peakAllocatedLow <= measured);
        CHECK(p.peakAllocatedHigh >= measured);
    }
}
