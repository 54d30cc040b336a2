// SPDX-License-Identifier: MIT
// The what-if projection: the worked example of a 7B model, lever properties, the ladder and
// the calibration round trip on generated runs.
#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/vocabulary/whatifblocks.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/query/whatifjson.h"
#include "core/whatif/ladder/whatifladder.h"
#include "core/whatif/terms/whatiflevers.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace headroom;

namespace {

constexpr double kGiB = double(1ull << 30);

/// The worked example: Llama-2-7B, seq 4096, micro-batch 4, bf16 + fp32 master + AdamW (foreach),
/// FlashAttention on, one H100 80 GiB.
struct Section7 {
    ModelDims dims = *modelPreset("llama2-7b");
    LeverConfig config;
    WhatIfConstants k;
    DeviceSpec dev = *devicePreset("h100-80gb");
    WhatIfBaseline base;
    Section7()
    {
        config.microBatch = 4;
        config.seq = 4096;
        config.precision = Precision::AmpBf16;
        config.optimizer = OptimizerKind::AdamW;
        config.flashAttention = true;
        base = analyticBaseline(dims, config, k);
    }
    Projection with(const LeverConfig& c) const { return project(base, c, k, dev); }
};

/// The worked example's tables are "allocated + C", before fragmentation.
double phaseGiB(const Projection& p, StepPhase ph)
{
    const auto& x = p.phases[size_t(ph)];
    return (x.allocated + p.componentAt(ph, "outside_allocator")) / kGiB;
}

/// The worked example's step times count compute, communication and offload, not the optimizer
/// step (small beside a micro-step); the tool reports it as its own item.
double stepSeconds(const Projection& p) { return p.time.total - p.time.optimizer; }

void near5(double got, double want, const char* what)
{
    INFO(what << ": got " << got << ", the worked example says " << want);
    CHECK(std::abs(got - want) <= 0.05 * std::abs(want));
}

struct Row {
    const char* name;
    double fwd, opt, peak, step;
    StepPhase peakPhase;
};

} // namespace

TEST_CASE("Worked example: components at the baseline", "[whatif]")
{
    Section7 s;
    const Projection p = s.with(s.config);
    const auto fwd = StepPhase::StartOfBackward;
    near5(p.componentAt(fwd, "weights") / kGiB, 12.55, "bf16 weights");
    near5(p.componentAt(fwd, "master") / kGiB, 25.10, "fp32 master");
    near5(p.componentAt(fwd, "optimizer_state") / kGiB, 50.20, "Adam m, v");
    near5(p.componentAt(StepPhase::OptimizerStep, "gradients") / kGiB, 12.55, "bf16 grads");
    near5(p.componentAt(fwd, "activations_linear") / kGiB, 68.0, "activations, FlashAttention");
    near5(p.componentAt(fwd, "temporaries_batch") / kGiB, 3.9, "logits");
    near5(p.componentAt(StepPhase::OptimizerStep, "temporaries_param") / kGiB, 25.1, "foreach intermediates");
    near5(p.componentAt(fwd, "outside_allocator") / kGiB, 1.0, "context");
    CHECK(p.componentAt(fwd, "gradients") == 0);

    LeverConfig noFlash = s.config;
    noFlash.flashAttention = false;
    const Projection q = s.with(noFlash);
    // The worked example prices a score at 5 bytes, all in 16 bits (388 GiB, 480.8 GiB). CUDA's
    // autocast runs the softmax in fp32: its output 4 B, the dropout mask 1 B and the next
    // matmul's bf16 cast 2 B, 7 B a score (docs/whatif-model.md, "The terms"), as the levers
    // price a move to autocast: 68 + 320 x 7/5 GiB.
    near5((q.componentAt(fwd, "activations_linear") + q.componentAt(fwd, "activations_attention")) / kGiB, 516.0,
          "activations without FlashAttention");
    near5(phaseGiB(q, fwd), 608.8, "peak without FlashAttention");

    near5(phaseGiB(p, fwd), 160.8, "start of backward");
    near5(phaseGiB(p, StepPhase::OptimizerStep), 126.5, "optimizer step");
    CHECK(p.peakPhase == StepPhase::StartOfBackward);
    CHECK(p.verdict == Verdict::DoesNotFit);
    near5(stepSeconds(p), 1.75, "step time");
    near5(p.time.tokensPerSecond, 9.3e3, "tokens/s");
}

TEST_CASE("Worked example: each lever alone", "[whatif]")
{
    Section7 s;
    auto cfg = [&](auto&& edit) {
        LeverConfig c = s.config;
        edit(c);
        return c;
    };
    const auto fwdP = StepPhase::StartOfBackward, optP = StepPhase::OptimizerStep;
    struct Case {
        Row row;
        LeverConfig c;
    };
    const std::vector<Case> cases = {
        {{"baseline", 160.8, 126.5, 160.8, 1.75, fwdP}, s.config},
        {{"fused AdamW", 160.8, 101.4, 160.8, 1.75, fwdP}, cfg([](auto& c) { c.optimizer = OptimizerKind::AdamWFused; })},
        {{"b=1, k=4", 119.4, 126.5, 126.5, 1.83, optP}, cfg([](auto& c) { c.microBatch = 1; c.accum = 4; })},
        {{"full checkpointing", 98.9, 126.5, 126.5, 2.34, optP}, cfg([](auto& c) { c.checkpoint = Checkpointing::Full; })},
        {{"8-bit Adam", 123.1, 63.8, 123.1, 1.75, fwdP}, cfg([](auto& c) { c.optimizer = OptimizerKind::Adam8bit; })},
        {{"pure bf16, fused", 110.6, 51.2, 110.6, 1.75, fwdP},
         cfg([](auto& c) { c.precision = Precision::Bf16; c.optimizer = OptimizerKind::AdamWFused; })},
        {{"ZeRO-Offload", 85.5, 14.5, 85.5, 4.0, fwdP}, cfg([](auto& c) { c.offload = Offload::Optimizer; })},
        {{"seq 2048", 124.8, 126.5, 126.5, 0.83, optP}, cfg([](auto& c) { c.seq = 2048; })},
        {{"LoRA r=16", 85.9, 14.2, 85.9, 1.25, fwdP}, cfg([](auto& c) { c.trainableFraction = 40.0e6 / 6.738e9; })},
        {{"ZeRO-3 over 8", 84.7, 17.5, 84.7, 1.77, fwdP}, cfg([](auto& c) { c.zero = 3; c.devices = 8; })},
    };
    for (const auto& [row, c] : cases) {
        INFO(row.name);
        const Projection p = s.with(c);
        near5(phaseGiB(p, fwdP), row.fwd, "start of backward");
        near5(phaseGiB(p, optP), row.opt, "optimizer step");
        near5(std::max({phaseGiB(p, fwdP), phaseGiB(p, StepPhase::Backward), phaseGiB(p, optP)}), row.peak, "peak");
        CHECK(p.peakPhase == row.peakPhase);
        near5(stepSeconds(p), row.step, "step time");
        CHECK(p.verdict != Verdict::Fits);
    }
}

TEST_CASE("Worked example: the cheapest path and the alternatives", "[whatif]")
{
    Section7 s;
    LeverConfig c = s.config;
    c.optimizer = OptimizerKind::AdamWFused;
    c.expandableSegments = true;
    Projection p = s.with(c);
    near5(p.phases[0].allocated / kGiB, 159.8, "hygiene");
    CHECK(!p.fits);
    c.optimizer = OptimizerKind::Adam8bit;
    p = s.with(c);
    near5(p.phases[0].allocated / kGiB, 122.1, "+ 8-bit Adam");
    CHECK(!p.fits);
    c.checkpoint = Checkpointing::Full;
    p = s.with(c);
    near5(p.phases[2].allocated / kGiB, 62.8, "+ full checkpointing (optimizer step)");
    near5(p.phases[0].allocated / kGiB, 60.2, "+ full checkpointing (start of backward)");
    CHECK(p.peakPhase == StepPhase::OptimizerStep);
    CHECK(p.fits);
    near5(stepSeconds(p), 2.34, "step time with full checkpointing");

    // 8-bit Adam with b=1, k=4 and no checkpointing: 80.7 GiB allocated, does not fit.
    LeverConfig a = s.config;
    a.optimizer = OptimizerKind::Adam8bit;
    a.expandableSegments = true;
    a.microBatch = 1;
    a.accum = 4;
    near5(s.with(a).phases[0].allocated / kGiB, 80.7, "8-bit, b=1, k=4");
    CHECK(!s.with(a).fits);

    struct Alt {
        const char* name;
        LeverConfig c;
        double peak, step;
    };
    auto alt = [&](auto&& edit) {
        LeverConfig x = s.config;
        x.microBatch = 2;
        x.accum = 2;
        edit(x);
        return x;
    };
    const std::vector<Alt> alts = {
        {"ZeRO-Offload b=2 k=2", alt([](auto& x) { x.offload = Offload::Optimizer; }), 50.4, 4.1},
        {"ZeRO-3 b=2 k=2 over 8", alt([](auto& x) { x.zero = 3; x.devices = 8; }), 50.3, 1.82},
        {"ZeRO-2 b=2 k=2 over 8", alt([](auto& x) { x.zero = 2; x.devices = 8; }), 60.5, 1.78},
        {"pure bf16 + full ckpt", alt([](auto& x) {
             x.microBatch = 4; x.accum = 1; x.precision = Precision::Bf16;
             x.optimizer = OptimizerKind::AdamWFused; x.checkpoint = Checkpointing::Full; }), 51.2, 2.34},
        {"LoRA b=2 k=2", alt([](auto& x) { x.trainableFraction = 40.0e6 / 6.738e9; }), 50.0, 1.27},
    };
    for (const auto& a2 : alts) {
        INFO(a2.name);
        const Projection q = s.with(a2.c);
        near5(std::max({phaseGiB(q, StepPhase::StartOfBackward), phaseGiB(q, StepPhase::Backward),
                        phaseGiB(q, StepPhase::OptimizerStep)}), a2.peak, "peak");
        near5(stepSeconds(q), a2.step, "step time");
        // The central is the worked example's (Megatron's fused layer); the band holds eager
        // layers' activations too (foldAnalyticReadings), so without checkpointing the high end
        // passes the margin: tight, never "does not fit".
        CHECK(q.peak < 80 * kGiB);
        CHECK((q.fits || q.verdict == Verdict::Tight));
        CHECK((q.fits == (a2.c.checkpoint == Checkpointing::Full)));
    }
}

TEST_CASE("Worked example: the ladder stops at the first fitting rung", "[whatif]")
{
    Section7 s;
    const Ladder l = buildLadder(s.base, s.config, s.k, s.dev);
    for (const auto& r : l.rungs) {
        std::string lv;
        for (const auto& x : r.levers)
            lv += x + " ";
        UNSCOPED_INFO(r.title << ": " << lv << " -> " << r.projection.peak / kGiB << " GiB (high "
                              << r.projection.peakHigh / kGiB << ") " << verdictName(r.projection.verdict));
    }
    CHECK_THAT(l.bottleneck, Catch::Contains("static"));
    REQUIRE(l.firstFit == 2); // hygiene, 8-bit Adam, full checkpointing
    const Rung& fit = l.rungs[size_t(l.firstFit)];
    CHECK(fit.config.checkpoint == Checkpointing::Full);
    CHECK(fit.config.optimizer == OptimizerKind::Adam8bit);
    CHECK(fit.config.microBatch == 4);
    CHECK(fit.projection.peakPhase == StepPhase::OptimizerStep);
    near5(stepSeconds(fit.projection), 2.34, "the fitting rung's step time");
    CHECK(l.rungs[1].config.optimizer == OptimizerKind::Adam8bit);
    CHECK(!l.rungs[0].projection.fits);
    CHECK(!l.rungs[1].projection.fits);
    CHECK(!l.needsDifferentPlan);
    // Someone with spare GPUs spends hardware first: sharding comes before the 8-bit optimizer.
    LadderOptions hw;
    hw.availableDevices = 8;
    hw.currencyOrder = {Currency::Hardware, Currency::Throughput, Currency::Engineering, Currency::Fidelity};
    const Ladder h = buildLadder(s.base, s.config, s.k, s.dev, hw);
    REQUIRE(h.firstFit >= 0);
    CHECK(h.rungs[size_t(h.firstFit)].config.zero >= 1);
    CHECK(h.rungs[size_t(h.firstFit)].config.optimizer != OptimizerKind::Adam8bit);
}

TEST_CASE("A small miss ends after one or two rungs; a 3x miss asks for a different plan", "[whatif]")
{
    Section7 s;
    LeverConfig c = s.config;
    c.optimizer = OptimizerKind::Adam8bit;
    c.checkpoint = Checkpointing::EveryK;
    c.checkpointEvery = 2;
    const Ladder near = buildLadder(s.base, c, s.k, s.dev);
    REQUIRE(near.firstFit >= 0);
    CHECK(near.firstFit <= 1);
    DeviceSpec small = *devicePreset("24gib");
    const Ladder far = buildLadder(s.base, s.config, s.k, small);
    CHECK(far.needsDifferentPlan);
    CHECK(far.alternatives.size() == 3);
}

TEST_CASE("Lever properties", "[whatif]")
{
    Section7 s;
    const auto fwd = StepPhase::StartOfBackward;
    auto acts = [](const Projection& p) {
        return p.componentAt(StepPhase::StartOfBackward, "activations_linear") +
               p.componentAt(StepPhase::StartOfBackward, "activations_attention");
    };
    SECTION("more micro-batch never lowers activations")
    {
        for (bool flash : {true, false})
            for (int seq : {512, 4096}) {
                double prev = 0;
                for (int b = 1; b <= 16; ++b) {
                    LeverConfig c = s.config;
                    c.flashAttention = flash;
                    c.seq = seq;
                    c.microBatch = b;
                    const double a = acts(s.with(c));
                    CHECK(a >= prev);
                    prev = a;
                }
            }
    }
    SECTION("model states fall from ZeRO 0 to 1 to 2 to 3")
    {
        auto states = [&](const Projection& p) {
            double sum = 0;
            for (const char* n : {"weights", "master", "gradients", "optimizer_state"})
                sum += p.componentAt(StepPhase::OptimizerStep, n);
            return sum;
        };
        for (int n : {2, 8, 64}) {
            double prev = 1e300;
            for (int z = 0; z <= 3; ++z) {
                LeverConfig c = s.config;
                c.zero = z;
                c.devices = n;
                const double st = states(s.with(c));
                CHECK(st < prev);
                prev = st;
            }
        }
    }
    SECTION("checkpointing lowers activations and raises step time")
    {
        for (bool flash : {true, false}) {
            LeverConfig c = s.config;
            c.flashAttention = flash;
            const Projection none = s.with(c);
            for (auto [kind, every] : {std::pair{Checkpointing::EveryK, 4}, std::pair{Checkpointing::EveryK, 2},
                                       std::pair{Checkpointing::Full, 1}}) {
                LeverConfig x = c;
                x.checkpoint = kind;
                x.checkpointEvery = every;
                const Projection p = s.with(x);
                CHECK(acts(p) < acts(none));
                CHECK(p.time.total > none.time.total);
            }
            LeverConfig sel = c;
            sel.checkpoint = Checkpointing::Selective;
            CHECK(acts(s.with(sel)) <= acts(none));
        }
    }
    SECTION("accumulation keeps the effective batch")
    {
        LeverConfig c = s.config;
        c.microBatch = 1;
        c.accum = 4;
        const Projection p = s.with(c);
        CHECK(p.config.effectiveBatch() == s.config.effectiveBatch());
        CHECK(p.time.tokensPerStep == Approx(s.with(s.config).time.tokensPerStep));
        CHECK(p.componentAt(fwd, "gradients") > 0); // co-resident with micro-steps 2..k
    }
    SECTION("levers are pure: the same input gives the same output, the input is untouched")
    {
        const WhatIfState before = s.base;
        const WhatIfState a = levers::withShape(s.base, 2, 2, 4096);
        const WhatIfState b = levers::withShape(s.base, 2, 2, 4096);
        CHECK(a.actLin.bytes == b.actLin.bytes);
        CHECK(s.base.actLin.bytes == before.actLin.bytes);
        CHECK(s.base.config == before.config);
    }
    SECTION("the band brackets the central value and the verdict uses the high end")
    {
        const Projection p = s.with(s.config);
        CHECK(p.peakLow < p.peak);
        CHECK(p.peakHigh > p.peak);
    }
}

namespace {

/// A generated run (tools/gen_snapshot.py): 4 layers, hidden 1024, 16 heads, fixed length.
std::string generated(int microBatch, int seq)
{
    const std::string dir = HEADROOM_GEN_DIR;
    const std::string path = dir + "/whatif_b" + std::to_string(microBatch) + "_s" + std::to_string(seq) + ".pickle";
    if (!std::filesystem::exists(path)) {
        std::filesystem::create_directories(dir);
        const std::string cmd = "python3 " HEADROOM_SOURCE_DIR "/tools/gen_snapshot.py --out " + path +
                                " --layers 4 --hidden 1024 --heads 16 --vocab 32000 --steps 3 --seq-jitter 0" +
                                " --micro-batch " + std::to_string(microBatch) + " --seq-len " + std::to_string(seq) +
                                " > /dev/null";
        REQUIRE(std::system(cmd.c_str()) == 0);
    }
    return path;
}

struct Measured {
    std::shared_ptr<const LoadedTrace> trace;
    DeviceAnalysis analysis;
    Calibration cal;
};

Measured measure(int b, int s, const StatedConfig& stated, const ModelDims& dims = {})
{
    Measured m;
    m.trace = Loader::load(generated(b, s));
    m.analysis = analyzeDevice(*m.trace, 0);
    m.cal = calibrate(*m.trace, 0, m.analysis, stated, dims);
    return m;
}

double projectedAllocated(const Projection& p)
{
    double peak = 0;
    for (const auto& ph : p.phases)
        if (ph.present)
            peak = std::max(peak, ph.allocated);
    return peak;
}

} // namespace

TEST_CASE("Calibration round trip on generated runs", "[whatif][gen]")
{
    StatedConfig stated;
    stated.precision = Precision::Bf16; // the generator trains in pure bf16
    WhatIfConstants k;
    DeviceSpec dev = *devicePreset("80gib");
    struct Pair {
        int b0, s0, b1, s1;
    };
    for (const Pair& pr : {Pair{2, 1024, 4, 1024}, Pair{4, 1024, 2, 1024}, Pair{2, 1024, 2, 2048}, Pair{1, 1024, 4, 1024},
                           Pair{2, 2048, 4, 1024}}) {
        StatedConfig st = stated;
        st.microBatch = pr.b0;
        st.seq = pr.s0;
        const Measured from = measure(pr.b0, pr.s0, st);
        StatedConfig st1 = stated;
        st1.microBatch = pr.b1;
        st1.seq = pr.s1;
        const Measured to = measure(pr.b1, pr.s1, st1);
        LeverConfig t = from.cal.baseline.config;
        t.microBatch = pr.b1;
        t.seq = pr.s1;
        const Projection p = project(from.cal.baseline, t, k, dev);
        const double got = projectedAllocated(p), want = to.cal.measuredPeak;
        const double err = (got - want) / want;
        std::printf("round trip b=%d s=%d -> b=%d s=%d: projected %.3f GiB, measured %.3f GiB, error %+.1f%%, "
                    "band %.3f..%.3f GiB (incl. F, C)\n",
                    pr.b0, pr.s0, pr.b1, pr.s1, got / kGiB, want / kGiB, err * 100, p.peakLow / kGiB, p.peakHigh / kGiB);
        CHECK(std::abs(err) < 0.10);
        // The band (which also holds fragmentation and the context) brackets the measured peak.
        CHECK(p.peakLow <= want + p.componentAt(p.peakPhase, "outside_allocator") + p.componentAt(p.peakPhase, "fragmentation"));
        CHECK(p.peakHigh >= want);
        // Projecting to the measured configuration reproduces the measurement.
        const Projection same = project(from.cal.baseline, from.cal.baseline.config, k, dev);
        CHECK(projectedAllocated(same) == Approx(from.cal.measuredPeak).epsilon(0.02));
    }
}

TEST_CASE("Calibration reads what the trace tells and names what is missing", "[whatif][gen]")
{
    // Without dimensions the generator's trace says nothing about b or s: a clear error.
    auto trace = Loader::load(generated(2, 1024));
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration bare = calibrate(*trace, 0, a, {});
    CHECK(bare.item("micro_batch")->how == "unknown");
    CHECK(bare.item("optimizer")->how == "read"); // Optimizer.step#AdamW.step
    CHECK(bare.item("accum")->value == "1");
    LeverConfig t = bare.baseline.config;
    t.microBatch = 4;
    try {
        bare.require(t);
        FAIL("expected a missing-value error");
    } catch (const WhatIfMissingValue& e) {
        CHECK(e.flag == "--measured-micro-batch");
        CHECK_THAT(std::string(e.what()), Catch::Contains("--measured-micro-batch"));
    }
    // With the model's hidden size and head count, tensor sizes tell b and s.
    ModelDims dims;
    dims.hidden = 1024;
    dims.heads = 16;
    const Calibration sized = calibrate(*trace, 0, a, {}, dims);
    REQUIRE(sized.item("micro_batch")->how == "read");
    CHECK(sized.item("micro_batch")->value == "2");
    CHECK(sized.item("seq")->value == "1024");
    CHECK(sized.baseline.config.flashAttention == false); // scores are materialised
    // Stated values are marked as stated.
    StatedConfig st;
    st.microBatch = 2;
    const Calibration stated = calibrate(*trace, 0, a, st, dims);
    CHECK(stated.item("micro_batch")->how == "stated");
    // JSON carries the keys.
    const auto j = projectionJson(project(sized.baseline, sized.baseline.config, {}, *devicePreset("80gib")), sized.measured,
                                  {}, *devicePreset("80gib"));
    for (const char* key : {"peak_bytes", "peak_low_bytes", "peak_high_bytes", "peak_phase", "fits", "step_time_s",
                            "tokens_per_s", "measured", "phases"})
        CHECK(j.contains(key));
    CHECK(j["measured"]["micro_batch"]["how"] == "read");
}

TEST_CASE("Peak-phase awareness: a longer sequence does not move an optimizer-step peak", "[whatif]")
{
    // A small-activation job whose peak sits in the optimizer step (foreach AdamW, b=1, short seq).
    ModelDims d = *modelPreset("llama2-7b");
    LeverConfig c;
    c.microBatch = 1;
    c.seq = 256;
    const WhatIfBaseline base = analyticBaseline(d, c, {});
    const DeviceSpec dev = *devicePreset("141gib");
    const Projection p0 = project(base, c, {}, dev);
    REQUIRE(p0.peakPhase == StepPhase::OptimizerStep);
    LeverConfig longer = c;
    longer.seq = 512;
    const Projection p1 = project(base, longer, {}, dev);
    CHECK(p1.peakPhase == StepPhase::OptimizerStep);
    CHECK(p1.peak == Approx(p0.peak));
    CHECK(p1.phases[0].total > p0.phases[0].total);
    bool said = false;
    for (const auto& n : p1.notes)
        said |= n.find("not the peak") != std::string::npos;
    CHECK(said);
}

// A benchmark, not a timed test (hidden; tools/bench.py runs it): `tst_core "[.benchmark]"`.
TEST_CASE("Recomputing a projection after a slider move", "[.benchmark][whatif]")
{
    Section7 s;
    LeverConfig c = s.config;
    const int n = 2000;
    double sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        c.microBatch = 1 + i % 8;
        c.checkpoint = i % 2 ? Checkpointing::Full : Checkpointing::None;
        sink += s.with(c).peak;
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
    std::printf("projection recompute: %.2f us per projection (%d runs), %.5f of a 16 ms frame\n", us, n, us / 16000.0);
    CHECK(sink > 0);
}

TEST_CASE("A CPU-recorded step carries its configuration; the allocated band brackets the projection", "[whatif][cpu]")
{
    // tests/data/cpu/decoder_base.pickle: tools/cpu_matrix.py's decoder at micro-batch 2,
    // sequence 128, fp32, AdamW, one iteration, recorded by python/headroom_cpu.py.
    auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/decoder_base.pickle");
    std::vector<MeasuredItem> how;
    const StatedConfig read = readTraceConfig(*trace, 0, &how);
    CHECK(read.microBatch == 2);
    CHECK(read.seq == 128);
    CHECK(read.precision == Precision::Fp32);
    CHECK(read.accum == 1);
    CHECK(read.devices == 1);
    REQUIRE(!how.empty());
    CHECK(how.front().detail == "the file's headroom_config");

    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration cal = calibrate(*trace, 0, a, {});
    LeverConfig target = cal.baseline.config;
    CHECK_NOTHROW(cal.require(target));
    target.microBatch = 4;
    CHECK_NOTHROW(cal.require(target)); // no --measured-* value is needed: the file told them
    const Projection base = project(cal.baseline, cal.baseline.config, {}, deviceForCapacity(0));
    const Projection more = project(cal.baseline, target, {}, deviceForCapacity(0));
    CHECK(more.peakAllocated > base.peakAllocated);
    for (const Projection* p : {&base, &more}) {
        CHECK(p->peakAllocatedLow <= p->peakAllocated);
        CHECK(p->peakAllocated <= p->peakAllocatedHigh);
        CHECK(p->peakAllocated < p->peak); // the total adds fragmentation and memory outside the allocator
    }
}

namespace {

/// The kk full step as it ran: micro-batch 4, sequence 128, fp32, one device.
StatedConfig kkStated()
{
    StatedConfig st;
    st.microBatch = 4;
    st.seq = 128;
    st.precision = Precision::Fp32;
    st.devices = 1;
    return st;
}

} // namespace

TEST_CASE("Projected fragmentation grows by at most a fifth of the projected activations", "[whatif][frag]")
{
    // The kk full step's cache holds more than its transients at the measured point; before the
    // cap every projected activation byte brought another byte of fragmentation.
    auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration cal = calibrate(*trace, 0, a, kkStated());
    CHECK(cal.baseline.fragRatio <= 0.20);
    LeverConfig t = cal.baseline.config;
    t.microBatch = 16;
    const DeviceSpec dev = deviceForCapacity(0);
    const Projection p0 = project(cal.baseline, cal.baseline.config, {}, dev);
    const Projection p1 = project(cal.baseline, t, {}, dev);
    const auto sob = StepPhase::StartOfBackward;
    const double dFrag = p1.componentAt(sob, "fragmentation") - p0.componentAt(sob, "fragmentation");
    const double dAlloc = p1.phases[0].allocated - p0.phases[0].allocated;
    CHECK(dAlloc > 0);
    CHECK(dFrag <= 0.20 * dAlloc + 1.0);
}

TEST_CASE("Activations are read at the forward/backward boundary when the backward's peak is late", "[whatif][boundary]")
{
    // The kk full step's highest point outside the optimizer lies late in the backward, after
    // most activations were freed (0.88 GiB left); at the end of the loss 5.35 GiB are alive.
    // Sixteen times the micro-batch needs about weights + optimizer state + 16 x 5.35 GiB.
    auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const MemoryTimeline& tl = trace->timelines[0];
    const Calibration cal = calibrate(*trace, 0, a, kkStated());
    const int64_t boundary = cal.events[0];
    REQUIRE(boundary >= 0);
    CHECK(a.phases.eventPhase[size_t(boundary)] != Phase::Backward);
    CHECK(a.phases.eventPhase[size_t(boundary) + 1] == Phase::Backward);
    // The late backward point stands for the end of the backward: the as-measured peak outside
    // the optimizer step is still what the trace recorded.
    CHECK(cal.baseline.measuredAllocated[1] >= cal.baseline.measuredAllocated[0]);

    double activations = 0;
    for (size_t i : a.liveAt(tl, boundary))
        if (a.classes[i].category == TensorCategory::Activation || a.classes[i].category == TensorCategory::AutogradDetail)
            activations += double(tl.allocations[i].size);
    CHECK(activations > 5.0 * kGiB);
    LeverConfig t = cal.baseline.config;
    t.microBatch = 64;
    const Projection p = project(cal.baseline, t, {}, deviceForCapacity(0));
    const double expected = cal.baseline.weights.bytes + cal.baseline.optimizer.bytes + 16 * activations;
    CHECK(p.peakPhase == StepPhase::StartOfBackward);
    CHECK(p.phases[0].allocated == Approx(expected).epsilon(0.03));
    // As measured, the projection is the trace's own peak.
    const Projection same = project(cal.baseline, cal.baseline.config, {}, deviceForCapacity(0));
    CHECK(same.peakAllocated == Approx(double(tl.peakAllocated)).epsilon(0.01));
}

TEST_CASE("What-if: the layers are the repeated blocks of the forward's saved tensors", "[whatif]")
{
    using namespace headroom;
    // embedding, three blocks of (a, b, c), head, loss
    const std::vector<uint64_t> keys{9, 1, 2, 3, 1, 2, 3, 1, 2, 3, 7, 8};
    const std::vector<int64_t> bytes{4, 10, 20, 30, 10, 20, 30, 10, 20, 30, 5, 6};
    const RepeatedBlocks rb = findRepeatedBlocks(keys, bytes);
    CHECK(rb.count == 3);
    CHECK(rb.period == 3);
    CHECK(rb.bytes == 180);
    CHECK(rb.start == 1);
    // no repetition: no layer count
    CHECK(findRepeatedBlocks({1, 2, 3, 4}, {1, 1, 1, 1}).count == 0);
    // too long to search: no layer count
    CHECK(findRepeatedBlocks(std::vector<uint64_t>(10, 1), std::vector<int64_t>(10, 1), 2, 8).count == 0);
}
