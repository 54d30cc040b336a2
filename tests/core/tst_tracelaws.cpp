// SPDX-License-Identifier: MIT
// Projections from evidence (docs/whatif-model.md): every allocation's own law, the whole
// history replayed, the readings the evidence allows kept in the band. On the bundled sample
// and on real GPU series (tests/data/real/gpu_series, each measured at two sequence lengths).
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/laws/allocationlaw.h"
#include "core/whatif/vocabulary/allocationsizes.h"
#include "core/whatif/projection/projectedallocator.h"
#include "core/whatif/projection/projectedtimeline.h"
#include "core/whatif/replay/runlaws.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

using namespace headroom;

namespace {

std::shared_ptr<const LoadedTrace> loadSeries(const std::string& name)
{
    return Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/real/gpu_series/" + name + ".pickle.gz");
}

StatedConfig statedFor(int b, int s)
{
    StatedConfig st;
    st.microBatch = b;
    st.seq = s;
    st.devices = 1;
    st.precision = Precision::Fp32;
    return st;
}

Calibration calibrated(const LoadedTrace& t, int b, int s) { return calibrate(t, 0, analyzeDevice(t, 0), statedFor(b, s)); }

Projection projectSeq(const Calibration& cal, int seq)
{
    LeverConfig t = cal.baseline.config;
    t.seq = seq;
    return project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
}

bool innermostPythonNamed(const FrameTable& frames, uint32_t stack, std::string_view name)
{
    for (uint32_t id : frames.stack(stack))
        if (frames.isPythonFrame(id))
            return frames.strings().get(frames.frame(id).name) == name;
    return false;
}

} // namespace

TEST_CASE("One size in an attention stack does not make every tensor of that size quadratic", "[whatif][laws]")
{
    // The bundled CS336 step (micro-batch 4, sequence 128, d 2560, 32 heads): its b*h*s^2
    // tensors are 8 MiB (softmax, scores); the b*s*d einsum outputs inside the user's own
    // scaled_dot_product_attention are 5 MiB and divide by b*s^2 too.
    auto t = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz");
    const DeviceAnalysis a = analyzeDevice(*t, 0);
    const MemoryTimeline& tl = t->timelines[0];
    const AllocationLaws laws = AllocationLaws::fromSnapshot(tl, a.classes, t->snapshot.frames, 4, 128, false);
    std::map<int64_t, int64_t> quadBySize;
    int64_t fiveMiBAmbiguous = 0, fiveMiBQuad = 0;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const AllocationLaw& law = laws.laws()[i];
        if (law.central == SizeLaw::TokensBySeq)
            ++quadBySize[tl.allocations[i].size];
        if (tl.allocations[i].size == 5 << 20) {
            fiveMiBQuad += law.central == SizeLaw::TokensBySeq;
            fiveMiBAmbiguous += law.ambiguous();
        }
    }
    CHECK(fiveMiBQuad == 0);
    CHECK(fiveMiBAmbiguous > 0); // the einsum outputs in the attention function: both readings kept
    for (const auto& [size, n] : quadBySize)
        UNSCOPED_INFO(n << " x " << size);
    REQUIRE(quadBySize.size() == 1);
    CHECK(quadBySize.begin()->first == 8 << 20);
    // 64 softmax outputs, 32 more softmax steps, and the scores the same call made.
    CHECK(quadBySize.begin()->second >= 96);
    // Quadratic bytes a fraction of the linear ones (the old size rule filed 5.3 GiB of the
    // start of backward as scores).
    CHECK(laws.bytesWith(SizeLaw::TokensBySeq) < laws.bytesWith(SizeLaw::Tokens) / 4);
}

TEST_CASE("A peak that moves to another moment is found by replaying every event", "[whatif][laws][real]")
{
    // CS336 small forward, micro-batch 8: at sequence 128 the peak is an FFN's SiLU
    // temporaries; at 1024 it is the attention softmax, not alive at the 128 peak.
    auto t128 = loadSeries("cn_memory_nvtx_small_128_forward");
    auto t1024 = loadSeries("cn_memory_nvtx_small_1024_forward");
    const Calibration cal = calibrated(*t128, 8, 128);
    REQUIRE(cal.baseline.trace);
    const Projection p = projectSeq(cal, 1024);
    REQUIRE(p.replayed);
    const double measured = double(t1024->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
    REQUIRE(p.replayPeakEvent >= 0);
    CHECK(p.replayPeakEvent != p.measuredPeakEvent);
    const TraceEvents& ev = t128->snapshot.devices[0].trace;
    CHECK(innermostPythonNamed(t128->snapshot.frames, ev.stack[size_t(p.replayPeakEvent)], "softmax"));
    CHECK(innermostPythonNamed(t128->snapshot.frames, ev.stack[size_t(p.measuredPeakEvent)], "silu"));
    // At the measured setting the replay is the trace's own curve.
    CHECK(cal.baseline.trace->measuredPeak() == Approx(double(t128->timelines[0].peakAllocated)).epsilon(1e-9));
}

TEST_CASE("Forward series at another sequence length project within 2%", "[whatif][laws][real]")
{
    struct Pair {
        const char* base;
        int b, s0;
        const char* target;
        int s1;
    };
    // niu: a Softmax module (softmax.py:forward) and attention in files of their own names;
    // hf: CS336 small inference at batch 32.
    for (const Pair& pr : {Pair{"niu_fwd_ctx100", 10, 100, "niu_fwd_ctx200", 200},
                           Pair{"niu_fwd_ctx200", 10, 200, "niu_fwd_ctx100", 100},
                           Pair{"hf_small_fp32_seq128_inference", 32, 128, "hf_small_fp32_seq512_inference", 512}}) {
        INFO(pr.base << " -> " << pr.target);
        auto base = loadSeries(pr.base);
        auto target = loadSeries(pr.target);
        const Projection p = projectSeq(calibrated(*base, pr.b, pr.s0), pr.s1);
        REQUIRE(p.replayed);
        const double measured = double(target->timelines[0].peakAllocated);
        CHECK(p.peakAllocated == Approx(measured).epsilon(0.02));
        CHECK(p.peakAllocatedLow <= measured);
        CHECK(p.peakAllocatedHigh >= measured);
    }
}

TEST_CASE("The replay at the measured setting is the timeline, event for event", "[whatif][laws]")
{
    auto t = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz");
    const DeviceAnalysis a = analyzeDevice(*t, 0);
    const MemoryTimeline& tl = t->timelines[0];
    const TraceProjector tp(tl, AllocationLaws::fromSnapshot(tl, a.classes, t->snapshot.frames, 4, 128, false), 4, 128);
    const TraceReplayPeak m = tp.project(4, 128);
    CHECK(m.central == Approx(double(tl.peakAllocated)).epsilon(1e-12));
    CHECK(m.centralEvent == tl.peakEventIndex);
    CHECK(m.low == Approx(m.central).epsilon(1e-12));
    CHECK(m.high == Approx(m.central).epsilon(1e-12));
    // Twice the micro-batch: constant state stays, every b-law allocation doubles.
    const TraceReplayPeak twice = tp.project(8, 128);
    CHECK(twice.central > m.central);
    CHECK(twice.central < 2 * m.central);
    // The timeline to draw: at the measured setting the trace's own curve; at another, its
    // highest point is the replayed peak, at the replay's event.
    const TraceProjector::Curve same = tp.curve(4, 128, tl.allocated.size());
    REQUIRE(same.central.size() == tl.allocated.size());
    size_t differ = 0; // floats: within 2^-24 of each value
    for (size_t i = 0; i < tl.allocated.size(); ++i)
        differ += std::abs(double(same.central[i]) - double(tl.allocated[i])) > 1e-7 * double(tl.allocated[i]);
    CHECK(differ == 0);
    const TraceProjector::Curve c = tp.curve(8, 128, tl.allocated.size());
    const auto top = std::max_element(c.central.begin(), c.central.end());
    CHECK(double(*top) == Approx(twice.central).epsilon(1e-7));
    CHECK(double(c.central[size_t(twice.centralEvent)]) == Approx(twice.central).epsilon(1e-7));
    // The band by blocks of events: as many as the events take, its top the replayed band's.
    CHECK(c.high.size() == (tl.allocated.size() + TraceProjector::Curve::kBandBlock - 1) / TraceProjector::Curve::kBandBlock);
    CHECK(*std::max_element(c.high.begin(), c.high.end()) == Approx(twice.high).epsilon(1e-6));
    CHECK(*std::min_element(c.low.begin(), c.low.end()) <= *std::min_element(c.central.begin(), c.central.end()));
    for (size_t i = 0; i < c.central.size(); i += 97)
        CHECK((c.lowAt(i) <= c.central[i] && c.central[i] <= c.highAt(i)));
}

TEST_CASE("Two runs of the job settle each line's growth", "[whatif][laws][real]")
{
    // niu forward at context 100 and 200: every ambiguity of the 100 run's snapshot is
    // settled by the 200 run, line by line, and the projection to 150 (measured, not given
    // to the fit) lands within 1%.
    auto r100 = loadSeries("niu_fwd_ctx100");
    auto r150 = loadSeries("niu_fwd_ctx150");
    auto r200 = loadSeries("niu_fwd_ctx200");
    const Calibration c100 = calibrated(*r100, 10, 100);
    const Calibration c200 = calibrated(*r200, 10, 200);
    REQUIRE(c100.baseline.trace);
    REQUIRE(c200.baseline.trace);
    const Projection one = projectSeq(c100, 150);
    CHECK_FALSE(one.ambiguities.empty());
    const RunLawsFit fit = fitLawsAcrossRuns(*c100.baseline.trace, {c200.baseline.trace.get()});
    CHECK(fit.settled > 0);
    CHECK(fit.linesMatched > 10);
    WhatIfBaseline both = c100.baseline;
    both.trace = fit.projector;
    LeverConfig t = both.config;
    t.seq = 150;
    const Projection two = project(both, t, WhatIfConstants{}, *devicePreset("80gib"));
    const double measured = double(r150->timelines[0].peakAllocated);
    CHECK(two.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(two.ambiguities.empty());
    CHECK(two.peakAllocatedHigh - two.peakAllocatedLow < one.peakAllocatedHigh - one.peakAllocatedLow);
    CHECK(two.peakAllocatedLow <= measured);
    CHECK(two.peakAllocatedHigh >= measured);
}

// A benchmark, not a timed test (hidden; tools/bench.py runs it with its 1M-event snapshot in
// HEADROOM_REPLAY_BENCH_FILE; the default is the bundled sample): a slider move re-projects by
// replaying every allocation. Printed against the import of the same file in the same run.
TEST_CASE("Re-projecting after a lever move", "[.benchmark][laws]")
{
    const char* env = std::getenv("HEADROOM_REPLAY_BENCH_FILE");
    const std::string file =
        env ? env : std::string(HEADROOM_SOURCE_DIR) + "/sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz";
    const auto t0 = std::chrono::steady_clock::now();
    auto t = Loader::load(file);
    const auto t1 = std::chrono::steady_clock::now();
    const DeviceAnalysis analysis = analyzeDevice(*t, 0);
    const auto c0 = std::chrono::steady_clock::now();
    const Calibration cal = calibrate(*t, 0, analysis, statedFor(4, 128));
    const double calibration = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    std::printf("what-if replay: calibration %.0f ms (laws included; the analysis before it not)\n", calibration * 1e3);
    REQUIRE(cal.baseline.trace);
    const TraceProjector& tp = *cal.baseline.trace;
    const int n = 20;
    double sink = 0;
    const auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
        sink += tp.project(1 + i % 8, 128 * (1 + i % 4)).central;
    const auto t3 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        LeverConfig c = cal.baseline.config;
        c.microBatch = 1 + i % 8;
        sink += project(cal.baseline, c, WhatIfConstants{}, *devicePreset("80gib")).peak;
    }
    const auto t4 = std::chrono::steady_clock::now();
    const double whole = std::chrono::duration<double>(t4 - t3).count() / n;
    const double load = std::chrono::duration<double>(t1 - t0).count();
    const double each = std::chrono::duration<double>(t3 - t2).count() / n;
    std::printf("what-if replay: %.2f ms per lever move over %zu events (%.1f ms per 1M), %.4f of the import (%.3f s)\n",
                each * 1e3, t->snapshot.devices[0].trace.count(),
                each * 1e9 / double(std::max<size_t>(1, t->snapshot.devices[0].trace.count())), each / load, load);
    std::printf("what-if replay: %.2f ms per whole projection (terms, replay, ambiguities)\n", whole * 1e3);
    const auto t5 = std::chrono::steady_clock::now();
    const ProjectedAllocatorRun sim = simulateProjected(tp, ReplayTarget{8, 256}, AllocatorConfig{}, 0);
    const double simulated = std::chrono::duration<double>(std::chrono::steady_clock::now() - t5).count();
    std::printf("what-if replay: %.0f ms for the projected run's reserved memory (%lld requests through the allocator model)\n",
                simulated * 1e3, (long long)sim.requests);
    // What a slider move costs the timeline (off the GUI thread): the projected run's curve
    // after every event, and with its requests through the allocator model.
    LeverConfig moved = cal.baseline.config;
    moved.microBatch = 8;
    const Projection p = project(cal.baseline, moved, WhatIfConstants{}, *devicePreset("80gib"));
    const size_t events = t->timelines[0].allocated.size();
    const auto t6 = std::chrono::steady_clock::now();
    sink += double(tp.curve(8, 128, events).central.size());
    const auto t7 = std::chrono::steady_clock::now();
    sink += double(projectTimeline(cal.baseline, p, events, AllocatorConfig{}).allocated.central.size());
    const auto t8 = std::chrono::steady_clock::now();
    std::printf("what-if replay: projected timeline %.0f ms for the curve, %.0f ms with the allocator model "
                "(%.2f x the lever move's replay)\n",
                std::chrono::duration<double>(t7 - t6).count() * 1e3, std::chrono::duration<double>(t8 - t7).count() * 1e3,
                std::chrono::duration<double>(t7 - t6).count() / std::max(1e-9, each));
    CHECK(sink > 0);
}

TEST_CASE("The projected run's requests through the allocator model give its reserved memory", "[whatif][laws][real]")
{
    // At the measured setting the simulation of the replayed requests is the recording's own
    // reserved peak (the bundled step: 56.91 GiB); projected from CS336 small's sequence 128 to
    // 1024 it is the 1024 run's measured reserved peak; under a smaller capacity it says where
    // the projected run stops.
    auto kk = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz");
    const Calibration kkCal = calibrated(*kk, 4, 128);
    Projection same = projectSeq(kkCal, 128);
    simulateReserved(same, kkCal.baseline, AllocatorConfig::fromSnapshot(kk->snapshot.allocatorSettings));
    REQUIRE(same.simulated);
    CHECK(double(same.simulated->peak) == Approx(double(kk->timelines[0].peakReserved)).epsilon(0.002));
    CHECK_FALSE(same.simulated->refused());
    // Its weights and optimizer state were allocated before the trace began: the simulation
    // starts from them, so it never reserves less than the projection allocates, and at a
    // capacity below that it stops (issue 45: it once started from an empty device and said fits).
    CHECK(double(same.simulated->peak) >= same.peakAllocated);
    Projection on40 = same;
    on40.capacity = 40.0 * double(int64_t(1) << 30);
    simulateReserved(on40, kkCal.baseline, AllocatorConfig::fromSnapshot(kk->snapshot.allocatorSettings));
    REQUIRE(on40.simulated);
    CHECK(on40.simulated->refused());
    CHECK(on40.verdict == Verdict::DoesNotFit);

    auto t128 = loadSeries("cn_memory_nvtx_small_128_forward");
    auto t1024 = loadSeries("cn_memory_nvtx_small_1024_forward");
    const Calibration cal = calibrated(*t128, 8, 128);
    Projection p = projectSeq(cal, 1024);
    simulateReserved(p, cal.baseline, AllocatorConfig{});
    REQUIRE(p.simulated);
    CHECK(double(p.simulated->peak) == Approx(double(t1024->timelines[0].peakReserved)).epsilon(0.02));

    const ProjectedAllocatorRun small = simulateProjected(*cal.baseline.trace, ReplayTarget{8, 1024}, AllocatorConfig{}, int64_t(1) << 30);
    REQUIRE(small.oom);
    CHECK(small.oom->event >= 0);
    CHECK(small.oom->reserved + small.oom->size > int64_t(1) << 30);
}

TEST_CASE("A score the size of an activation stays ambiguous until a second run settles it", "[whatif][laws][cpu]")
{
    // The CPU llama (2 heads x sequence 64 = d 128): its einsum scores are as large as its
    // b*s*d activations. One run keeps both readings for them and says so; the band holds the
    // measured run at twice the sequence. A run at four times the sequence settles them.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto base = Loader::load(dir + "llama_base.pickle");
    auto seq2 = Loader::load(dir + "llama_seq2.pickle");
    auto seq4 = Loader::load(dir + "llama_seq4.pickle");
    const Calibration one = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(one.baseline.config.seq == 64);
    const Projection p = projectSeq(one, 128);
    REQUIRE(p.replayed);
    const auto einsum = std::find_if(p.ambiguities.begin(), p.ambiguities.end(), [](const ProjectedAmbiguity& a) {
        return a.where.find("einsum") != std::string::npos && a.central == "b*s" &&
               std::find(a.readings.begin(), a.readings.end(), "b*s^2") != a.readings.end();
    });
    CHECK(einsum != p.ambiguities.end());
    const double measured = double(seq2->timelines[0].peakAllocated);
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);

    const Calibration four = calibrate(*seq4, 0, analyzeDevice(*seq4, 0), {});
    const RunLawsFit fit = fitLawsAcrossRuns(*one.baseline.trace, {four.baseline.trace.get()});
    WhatIfBaseline both = one.baseline;
    both.trace = fit.projector;
    LeverConfig t = both.config;
    t.seq = 128;
    const Projection two = project(both, t, WhatIfConstants{}, *devicePreset("80gib"));
    for (const auto& a : two.ambiguities)
        UNSCOPED_INFO(a.count << " x " << a.sizeEach << " " << a.where << " " << a.central << " " << a.evidence);
    CHECK(std::none_of(two.ambiguities.begin(), two.ambiguities.end(),
                       [](const ProjectedAmbiguity& a) { return a.where.find("einsum") != std::string::npos; }));
    CHECK(two.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(two.peakAllocatedHigh - two.peakAllocatedLow < p.peakAllocatedHigh - p.peakAllocatedLow);
}

TEST_CASE("A replay of a history an OOM cut says so", "[whatif][laws][cpu]")
{
    // tests/data/cpu/imbalanced_oom.pickle: device 1 stopped at an OOM in its forward.
    auto t = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/imbalanced_oom.pickle");
    REQUIRE(t->snapshot.devices.size() > 1);
    REQUIRE_FALSE(t->snapshot.devices[1].ooms.empty());
    StatedConfig st = statedFor(16, 128);
    const Calibration cal = calibrate(*t, 1, analyzeDevice(*t, 1), st);
    REQUIRE(cal.baseline.trace);
    CHECK(cal.baseline.trace->stoppedAt() == t->snapshot.devices[1].ooms.front().eventIndex);
    const Projection p = projectSeq(cal, 256);
    REQUIRE(p.replayed);
    CHECK(std::any_of(p.notes.begin(), p.notes.end(),
                      [](const std::string& n) { return n.find("stopped at an OOM") != std::string::npos; }));
}

TEST_CASE("The causal-mask clause on a family it was not written from", "[whatif][laws][cpu]")
{
    // Written from decoder_infer (whose attention code the decoder and moe share). The CPU
    // llama builds its mask in LlamaAttention.forward (cpu_models_more.py:124,
    // torch.ones(t, t, dtype=torch.bool).tril()) and passes it to a user-written attention of
    // einsums with a user-written softmax, one frame further in: its s x s bool masks.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto base = Loader::load(dir + "llama_base.pickle");
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    const MemoryTimeline& tl = base->timelines[0];
    const FrameTable& frames = base->snapshot.frames;
    const auto& laws = cal.baseline.trace->laws().laws();
    int masks = 0, readS2 = 0;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const auto lines = frames.topFrameLines(tl.allocations[i].stack, 1);
        if (lines.empty() || lines.front().find("cpu_models_more.py:124:") == std::string::npos)
            continue;
        ++masks;
        readS2 += laws[i].central == SizeLaw::SeqSquared;
        UNSCOPED_INFO(tl.allocations[i].size << " " << sizeLawName(laws[i].central) << " by "
                                             << lawEvidenceName(laws[i].evidence));
    }
    REQUIRE(masks > 0);
    CHECK(readS2 == masks);
}

TEST_CASE("The replay's sizes: 4 bytes for the allocator's blocks, any other size kept exact", "[whatif][laws]")
{
    AllocationSizes sizes;
    const std::vector<int64_t> given = {512, 0, 300, int64_t(1) << 40, (int64_t(1) << 41) + 512, 1024, -512, 7};
    for (int64_t z : given)
        sizes.push_back(z);
    REQUIRE(sizes.size() == given.size());
    for (size_t i = 0; i < given.size(); ++i)
        CHECK(sizes[i] == given[i]); // 300, 2 TiB + 512, -512 and 7 go through the side table
}

TEST_CASE("An autocast forward's weight casts do not grow with the sequence", "[whatif][laws][cpu]")
{
    // tests/data/cpu/amp_casts_seq{16,256}.pickle (record_amp_casts.py): a no_grad forward under
    // bf16 autocast at micro-batch 1, recorded without shapes or op graph (a GPU snapshot has
    // neither). The bf16 casts of its fp32 weights (half a weight each, one per weight) are
    // freed with the forward, temporaries; their sizes divide by the 16 tokens, so they were
    // read b*s: 16x the sequence projected +450.8% with a band 6% wide. One per weight of twice
    // their size and iteration is a cast (constant, evidence "cast"); the band keeps b*s.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto base = Loader::load(dir + "amp_casts_seq16.pickle");
    auto seq16x = Loader::load(dir + "amp_casts_seq256.pickle");
    REQUIRE(base->snapshot.devices[0].trace.tensors.empty());
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    const auto& laws = cal.baseline.trace->laws().laws();
    const auto& allocations = base->timelines[0].allocations;
    size_t weightCasts = 0; // the matrices' (the biases' casts are read so too)
    for (size_t i = 0; i < laws.size(); ++i)
        if (laws[i].evidence == LawEvidence::Cast) {
            weightCasts += allocations[i].size >= 128 * 1024;
            CHECK(laws[i].central == SizeLaw::Constant);
            CHECK((laws[i].allowed & lawBit(SizeLaw::Tokens)) != 0);
        }
    CHECK(weightCasts == 2 * (4 * 4 + 1)); // two iterations: four layers of four Linears, the head
    const Projection p = projectSeq(cal, 256);
    REQUIRE(p.replayed);
    const double measured = double(seq16x->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.05));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
    const bool named = std::any_of(p.ambiguities.begin(), p.ambiguities.end(),
                                   [](const ProjectedAmbiguity& a) { return a.evidence == "cast"; });
    CHECK(named);
}
