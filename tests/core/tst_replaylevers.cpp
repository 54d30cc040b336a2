// SPDX-License-Identifier: MIT
// Levers the replay takes beyond the micro-batch and the sequence (docs/whatif-model.md,
// "Precision" and "Laws": tokens beyond the stated sequence): a pure precision as the element
// width of every floating-point allocation, and scores over a ViT's class token. Each checked
// against a CPU recording of real PyTorch at the target setting (tests/data/cpu/README.md).
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"
#include "core/whatif/laws/widthlaw.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

std::shared_ptr<const LoadedTrace> cpuFile(const std::string& name)
{
    return Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/" + name);
}

/// The file's own configuration (the recorder's headroom_config), as whatif reads it.
Calibration calibrated(const LoadedTrace& t) { return calibrate(t, 0, analyzeDevice(t, 0), {}); }

Projection projectTo(const Calibration& cal, void (*move)(LeverConfig&))
{
    LeverConfig t = cal.baseline.config;
    move(t);
    return project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
}

double measuredPeak(const LoadedTrace& t) { return double(t.timelines[0].peakAllocated); }

bool hasNote(const Projection& p, std::string_view text)
{
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.find(text) != n.npos; });
}

/// The projection against the recording at its target: central within `eps`, band around it.
void checkAgainst(const Projection& p, double measured, double eps)
{
    CHECK(p.peakAllocated == Approx(measured).epsilon(eps));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
}

} // namespace

TEST_CASE("A recorded dtype says which tensors take the precision's width", "[whatif][precision]")
{
    CHECK(floatingDtype("float32"));
    CHECK(floatingDtype("torch.bfloat16"));
    CHECK(floatingDtype("float16"));
    CHECK(floatingDtype("half"));
    CHECK_FALSE(floatingDtype("int64"));
    CHECK_FALSE(floatingDtype("torch.bool"));
    CHECK_FALSE(floatingDtype("uint8"));
    // A class read both ways spans both widths; one read once keeps its own.
    CHECK(widthFactors(WidthClass::Float, 0.5).high == 0.5);
    CHECK(widthFactors(WidthClass::Fixed, 0.5).low == 1);
    const WidthFactors either = widthFactors(WidthClass::MaybeFloat, 0.5);
    CHECK(either.central == 1);
    CHECK(either.low == 0.5);
    CHECK(either.high == 1);
}

TEST_CASE("fp32 to pure bf16 replays every floating-point allocation at half its bytes", "[whatif][precision][cpu]")
{
    // The CPU decoder, recorded with dtypes, and the same job run in bf16 (model.to(bfloat16)).
    auto base = cpuFile("decoder_base_shapes.pickle");
    auto bf16 = cpuFile("decoder_bf16.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    REQUIRE(cal.baseline.config.precision == Precision::Fp32);
    const WidthReadings& w = cal.baseline.trace->laws().widths();
    CHECK(w.floatRead > 0);
    CHECK(w.fixedRead > 0); // the token ids, the targets, the loss's indices
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::Bf16; });
    REQUIRE(p.replayed);
    CHECK(p.replayTarget.floatWidth == 0.5);
    CHECK(hasNote(p, "precision replayed"));
    const double measured = measuredPeak(*bf16);
    checkAgainst(p, measured, 0.01);
    // Mixed precision is not a width the trace can replay: its casts and fp32 ops are the terms'.
    const Projection amp = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::AmpBf16; });
    CHECK_FALSE(amp.replayed);
}

TEST_CASE("Ops a bf16 model computes in fp32 are in the band, not the central reading", "[whatif][precision][cpu]")
{
    // The CPU llama's RMSNorm computes in fp32 (x.to(float32)), so its bf16 run holds casts
    // and fp32 results its fp32 trace has no allocation for: the halved replay is under the
    // measurement, which the band's allowance for them holds. Without recorded dtypes every
    // tensor is assumed floating point, and the token ids (8 bytes per token) keep both readings.
    auto base = cpuFile("llama_base.pickle");
    auto bf16 = cpuFile("llama_bf16.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const WidthReadings& w = cal.baseline.trace->laws().widths();
    CHECK(w.floatRead == 0);
    CHECK(w.floatAssumed > 0);
    CHECK(w.either > 0);
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::Bf16; });
    REQUIRE(p.replayed);
    CHECK(hasNote(p, "assumed where none was recorded"));
    CHECK(hasNote(p, "may be token ids or features"));
    const double measured = measuredPeak(*bf16);
    CHECK(p.peakAllocated < measured);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.08));
    CHECK(p.peakAllocatedHigh >= measured);
    CHECK(p.peakAllocatedLow <= p.peakAllocated);
}

TEST_CASE("A ViT's scores over its class token project to four times the patches", "[whatif][shapes][cpu]")
{
    // The CPU ViT at 64 patches (65 tokens with the class token) and the same job at 256
    // patches: its scores grow as (s+1)^2, not (s)^2, and not as b*s, the reading of their
    // sizes alone (b*h*65^2*4 bytes is no multiple of b*64^2).
    auto base = cpuFile("vit_base.pickle");
    auto seq4 = cpuFile("vit_seq4.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    CHECK(cal.baseline.trace->laws().tokenOffset() == 1);
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.seq *= 4; });
    REQUIRE(p.replayed);
    const double measured = measuredPeak(*seq4);
    checkAgainst(p, measured, 0.02);
}

TEST_CASE("An optimizer change replays the optimizer's state and its step's temporaries", "[whatif][optimizer][cpu]")
{
    // The CPU llama trained by a for-each AdamW, and the same job trained by plain SGD (no
    // state, no temporaries): the replay drops both and keeps every other allocation.
    auto base = cpuFile("llama_base.pickle");
    auto sgd = cpuFile("llama_sgd.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    REQUIRE(cal.baseline.config.optimizer == OptimizerKind::AdamW);
    const AllocationLaws& laws = cal.baseline.trace->laws();
    CHECK(laws.roleBytes(StateRole::OptimizerState) > 0);
    CHECK(laws.roleBytes(StateRole::OptimizerTemp) > 0);
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.optimizer = OptimizerKind::Sgd; });
    REQUIRE(p.replayed);
    CHECK(p.replayTarget.optimizerState == 0);
    CHECK(hasNote(p, "optimizer replayed"));
    const double measured = measuredPeak(*sgd);
    checkAgainst(p, measured, 0.005);

    // 8-bit Adam keeps 2 bytes of state per parameter against AdamW's 8; with a larger
    // micro-batch it is still one replay (before, any second lever sent all to the terms).
    const Projection q = projectTo(cal, [](LeverConfig& t) {
        t.optimizer = OptimizerKind::Adam8bit;
        t.microBatch *= 4;
    });
    REQUIRE(q.replayed);
    CHECK(q.replayTarget.optimizerState == Approx(0.25));
    // A fused AdamW makes no step temporaries: a for-each AdamW's cannot be made from a run
    // read as fused, so the terms price that move.
    const Projection fusedBack = [&] {
        WhatIfBaseline b = cal.baseline;
        b.config.optimizer = OptimizerKind::AdamWFused;
        LeverConfig t = b.config;
        t.optimizer = OptimizerKind::AdamW;
        return project(b, t, WhatIfConstants{}, *devicePreset("80gib"));
    }();
    CHECK_FALSE(fusedBack.replayed);
}

TEST_CASE("Accumulation replays a later micro-step: every gradient alive through its forward", "[whatif][accum][cpu]")
{
    // The CPU convnet at one micro-step per optimizer step (zero_grad with set_to_none), and
    // the same job at four: from the second micro-step on, the gradients of the first are alive
    // while the forward runs, and the backward's own are added into them and freed.
    auto base = cpuFile("convnet_base.pickle");
    auto accum4 = cpuFile("convnet_accum4.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const AccumulationPlan& plan = cal.baseline.trace->accumulationPlan();
    REQUIRE_FALSE(plan.empty());
    CHECK(plan.gradients > 0);
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.accum = 4; });
    REQUIRE(p.replayed);
    CHECK(p.replayTarget.accumulated);
    CHECK(hasNote(p, "accumulation replayed"));
    const double measured = measuredPeak(*accum4);
    checkAgainst(p, measured, 0.005);
    // The gradients add to the forward: more than the measured peak, by at most all of them.
    CHECK(p.peakAllocated > cal.baseline.trace->measuredPeak());
    CHECK(p.peakAllocated <= cal.baseline.trace->measuredPeak() + double(plan.gradientBytes) + 1);
    // A history refined by more evidence (other laws, as several runs give) keeps its plans.
    const TraceProjector refined(*cal.baseline.trace, cal.baseline.trace->laws());
    CHECK(refined.accumulationPlan().gradients == plan.gradients);
    CHECK(refined.checkpointPlan().moves.size() == cal.baseline.trace->checkpointPlan().moves.size());
}

TEST_CASE("A weight's incoming gradient, added into the .grad kept from before, does not grow with the batch",
          "[whatif][accum][laws][cpu]")
{
    // The convnet at four micro-steps, micro-batch 2 and 4, without shapes (as a GPU file has
    // none). From the second micro-step on, its 3x3 convolutions' weight gradients are made as
    // temporaries of 36,864 bytes (a multiple of b*s at micro-batch 2) and added into the
    // gradients kept from the first. Read as b*s, the projection was +1.2% with the band missing.
    auto mb2 = cpuFile("accum_mb2.pickle");
    auto mb4 = cpuFile("accum_mb4.pickle");
    const Calibration cal = calibrated(*mb2);
    REQUIRE(cal.baseline.trace);
    const AllocationLaws& laws = cal.baseline.trace->laws();
    size_t incoming = 0;
    for (const AllocationLaw& law : laws.laws())
        if (law.evidence == LawEvidence::Gradient) {
            ++incoming;
            CHECK(law.central == SizeLaw::Constant);
            CHECK((law.allowed & lawBit(SizeLaw::Tokens)) != 0); // the size's reading stays in the band
        }
    CHECK(incoming > 0);
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.microBatch = 4; });
    REQUIRE(p.replayed);
    checkAgainst(p, measuredPeak(*mb4), 0.002);
}

TEST_CASE("A pure bf16 model built in fp32 on the device peaks at its cast: both readings in the band",
          "[whatif][precision][cpu]")
{
    // Written from the CPU llama_infer family, checked here on an MLP it was not written from:
    // the bf16 run builds in fp32 and casts, so every fp32 weight is alive at once, beside the
    // first bf16 copy, and that is its peak (above the fp32 run's). A model built in bf16 never
    // holds them: the band's low edge.
    auto base = cpuFile("mlp_infer_fp32.pickle");
    auto bf16 = cpuFile("mlp_infer_bf16.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const CastPlan& plan = cal.baseline.trace->castPlan();
    REQUIRE_FALSE(plan.empty());
    CHECK(plan.parameters == 8); // three Linear layers' weights and biases, the LayerNorm's two
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::Bf16; });
    REQUIRE(p.replayed);
    CHECK(p.replayTarget.castAfterBuild);
    const double measured = measuredPeak(*bf16);
    CHECK(measured > measuredPeak(*base));
    checkAgainst(p, measured, 0.005);
    CHECK(p.replayPeakEvent == plan.event);
    CHECK(hasNote(p, "ambiguous: how the model reaches bf16"));
    // Built narrow, the forward's peak: half the fp32 run's, well under the cast.
    CHECK(p.peakAllocatedLow < 0.55 * measuredPeak(*base));
}

TEST_CASE("The cast after the build is the central reading only where it moves the peak", "[whatif][precision][cpu]")
{
    // The CPU decoder's bf16 training run peaks in its step, far above its build: the cast
    // changes nothing there, and no ambiguity is named for it.
    auto base = cpuFile("decoder_base_shapes.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    CHECK_FALSE(cal.baseline.trace->castPlan().empty());
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::Bf16; });
    CHECK_FALSE(hasNote(p, "ambiguous: how the model reaches"));
    CHECK(p.replayPeakEvent > cal.baseline.trace->castPlan().event);
}

TEST_CASE("Fused attention replays the run without its b*s^2 tensors, wherever the peak then moves",
          "[whatif][flash][cpu]")
{
    // The CPU decoder's eager attention materialises its scores (read b*s^2 by their shape).
    // FlashAttention makes none of them, forward or backward: the replay drops exactly those
    // allocations, so at four times the sequence, where the scores dominate, most of the
    // growth goes. Written from what fused attention does; the CPU PyTorch 1.13 has no fused
    // attention to record, so no run checks the figure.
    auto base = cpuFile("decoder_base_shapes.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const AllocationLaws& laws = cal.baseline.trace->laws();
    REQUIRE(laws.bytesWith(SizeLaw::TokensBySeq) > 0);
    REQUIRE_FALSE(cal.baseline.config.flashAttention);
    const auto longer = [](LeverConfig& t) { t.seq *= 4; };
    const Projection eager = projectTo(cal, longer);
    const Projection fused = projectTo(cal, [](LeverConfig& t) {
        t.seq *= 4;
        t.flashAttention = true;
    });
    REQUIRE(fused.replayed);
    CHECK(fused.replayTarget.fusedAttention);
    CHECK(hasNote(fused, "fused attention replayed"));
    CHECK(fused.peakAllocated < 0.8 * eager.peakAllocated);
    CHECK(fused.peakAllocatedLow <= fused.peakAllocated);
    CHECK(fused.peakAllocatedHigh >= fused.peakAllocated);
    // No b*s^2 allocation in the fused run's request stream (what the allocator simulation sees).
    bool anyScores = false;
    cal.baseline.trace->visit(fused.replayTarget, [&](int64_t, uint32_t alloc, bool end, double bytes) {
        if (!end && laws.laws()[alloc].central == SizeLaw::TokensBySeq && bytes > 0)
            anyScores = true;
    });
    CHECK_FALSE(anyScores);
    // At the measured sequence the saving is what the scores held at the peak, never a gain.
    const Projection same = projectTo(cal, [](LeverConfig& t) { t.flashAttention = true; });
    CHECK(same.peakAllocated <= measuredPeak(*base));
}

TEST_CASE("Tensors a shape-preserving op joined grow alike: masked scores at h*s = d", "[whatif][laws][cpu]")
{
    // The CPU llama forward under no_grad (2 heads = micro-batch 2, head width 64 = sequence
    // 64, so h*s = d): its masked scores (torch.where) and the scaled scores before them are
    // [2, 2, 64, 64], as large as q, k, v and the attention's output, and their shapes allow
    // b*s and b*s^2 alike. The recorder's `like` links join them, through the pointwise ops of
    // the user's softmax, to the softmax's output, which its stack reads b*s^2. Without the
    // links the replay read them b*s and projected the 4x sequence 12.3% low.
    auto base = cpuFile("llama_infer_base.pickle");
    auto seq4 = cpuFile("llama_infer_seq4.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const AllocationLaws& laws = cal.baseline.trace->laws();
    size_t joinedQuadratic = 0;
    for (const AllocationLaw& law : laws.laws())
        joinedQuadratic += law.evidence == LawEvidence::Op && law.central == SizeLaw::TokensBySeq;
    CHECK(joinedQuadratic >= 2 * 2 * 3); // two layers, two iterations: the bmm, the scaling, the where
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.seq *= 4; });
    REQUIRE(p.replayed);
    checkAgainst(p, measuredPeak(*seq4), 0.01);
    // The shapes allow both readings still: the band keeps them, and says a run settles it.
    const bool runSettles = std::any_of(p.ambiguities.begin(), p.ambiguities.end(), [](const ProjectedAmbiguity& a) {
        return a.shapeRecorded && a.evidence == "op";
    });
    CHECK(runSettles);
}

TEST_CASE("Sharding and offload resize their roles' allocations at their own moments", "[whatif][sharding][cpu]")
{
    // ZeRO-3 over 4 devices of the CPU llama (AdamW): the parameters, gradients, optimizer
    // state and the step's temporaries at a quarter, as the terms shard them, and a gathered
    // layer held throughout. Checked against a plain sweep of the measured allocations with
    // those factors (not the projector's walk).
    auto base = cpuFile("llama_base.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const Projection p = projectTo(cal, [](LeverConfig& t) {
        t.zero = 3;
        t.devices = 4;
    });
    REQUIRE(p.replayed);
    CHECK(p.replayTarget.parameters == Approx(0.25));
    CHECK(p.replayTarget.gradients == Approx(0.25));
    CHECK(p.replayTarget.optimizerState == Approx(0.25));
    REQUIRE(p.replayTarget.standing > 0);
    CHECK(hasNote(p, "sharding and offload replayed"));

    const MemoryTimeline& tl = base->timelines[0];
    const AllocationLaws& laws = cal.baseline.trace->laws();
    std::vector<std::pair<int64_t, double>> deltas; // (event, bytes): frees before allocations at one event
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const double f = laws.laws()[i].role == StateRole::Other ? 1.0 : 0.25;
        const double z = std::ceil(double(a.size) * f / 512.0) * 512.0;
        deltas.emplace_back(std::max<int64_t>(a.start, -1), z);
        if (a.end != Allocation::kStillAlive)
            deltas.emplace_back(a.end, -z);
    }
    std::sort(deltas.begin(), deltas.end());
    double live = 0, peak = 0;
    for (size_t i = 0; i < deltas.size(); ++i) {
        live += deltas[i].second;
        if (i + 1 == deltas.size() || deltas[i + 1].first != deltas[i].first)
            peak = std::max(peak, live);
    }
    CHECK(p.peakAllocated == Approx(peak + p.replayTarget.standing).epsilon(0.01));
    CHECK(p.peakAllocated < Projection(projectTo(cal, [](LeverConfig&) {})).peakAllocated);

    // Offloading the optimizer takes its state and the step's temporaries off the device.
    const Projection off = projectTo(cal, [](LeverConfig& t) { t.offload = Offload::Optimizer; });
    REQUIRE(off.replayed);
    CHECK(off.replayTarget.optimizerState == 0);
    CHECK(off.replayTarget.optimizerTemp == 0);
}

TEST_CASE("Autocast is replayed from the recorder's op graph", "[whatif][precision][cpu]")
{
    // docs/whatif-model.md, "Autocast from the op graph". gpt2fused trained (weights cast once
    // per forward, activations cast per use and kept where their op saved them, layer norms'
    // fp32 outputs freed once cast, F.cross_entropy in fp32) and decoder_infer under no_grad,
    // and the llama, whose RMSNorm and rotary tables cast (no-ops in fp32: the recorder's
    // `casts`), each against its recording under CPU bf16 autocast.
    struct Case {
        const char *fp32, *amp;
        double eps;
    };
    for (const Case& c : {Case{"gpt2fused_graph.pickle", "gpt2fused_graph_amp_bf16.pickle", 0.01},
                          Case{"decoder_infer_graph.pickle", "decoder_infer_graph_amp_bf16.pickle", 0.01},
                          Case{"llama_graph.pickle", "llama_graph_amp_bf16.pickle", 0.01}}) {
        INFO(c.fp32);
        auto base = cpuFile(c.fp32);
        auto amp = cpuFile(c.amp);
        const Calibration cal = calibrated(*base);
        REQUIRE(cal.baseline.trace);
        const AutocastPlan& plan = cal.baseline.trace->autocastPlan();
        REQUIRE_FALSE(plan.empty());
        CHECK(plan.narrowedCount > 0);
        CHECK(plan.weightCopies > 0);
        CHECK(plan.regions == 2); // two iterations, one forward each
        const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::AmpBf16; });
        REQUIRE(p.replayed);
        CHECK(p.replayTarget.autocast);
        CHECK(hasNote(p, "autocast replayed from the recorded op graph"));
        checkAgainst(p, measuredPeak(*amp), c.eps);
    }
    // Trained, autograd keeps the layer norms' casts, not their fp32 outputs.
    CHECK_FALSE(calibrated(*cpuFile("gpt2fused_graph.pickle")).baseline.trace->autocastPlan().earlyEnds.empty());
    // Without the graph there is no plan, and the terms price autocast.
    const Calibration plain = calibrated(*cpuFile("decoder_infer_base.pickle"));
    REQUIRE(plain.baseline.trace);
    CHECK(plain.baseline.trace->autocastPlan().empty());
    CHECK_FALSE(projectTo(plain, [](LeverConfig& t) { t.precision = Precision::AmpBf16; }).replayed);
}

TEST_CASE("Autocast follows the target device's op lists", "[whatif][precision][cpu]")
{
    // docs/whatif-model.md, "Autocast from the op graph". The same runs recorded naming an
    // 80 GiB GPU as their target: CUDA's lists run softmax, layer_norm and pow in fp32, so the
    // attention's probabilities stay fp32 with a bf16 cast for the next matmul. The truth is a
    // run under CUDA's lists emulated on the CPU (python/headroom_autocast.py).
    for (const char* stem : {"gpt2fused_graph", "decoder_infer_graph"}) {
        INFO(stem);
        const std::string s(stem);
        auto amp = cpuFile(s + "_amp_cuda.pickle");
        CHECK(autocastListsFor(cpuFile(s + ".pickle")->snapshot) == AutocastLists::Cpu113);
        auto base = cpuFile(s + "_h100.pickle");
        REQUIRE(autocastListsFor(base->snapshot) == AutocastLists::Cuda);
        const Calibration cal = calibrated(*base);
        REQUIRE(cal.baseline.trace);
        const AutocastPlan& plan = cal.baseline.trace->autocastPlan();
        REQUIRE_FALSE(plan.empty());
        CHECK(plan.lists == AutocastLists::Cuda);
        CHECK(plan.fp32Ops > 0);
        const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::AmpBf16; });
        REQUIRE(p.replayed);
        CHECK(hasNote(p, "CUDA's autocast lists"));
        checkAgainst(p, measuredPeak(*amp), 0.02);
        // The CPU's lists (the file without a target) miss CUDA's run by more than a tenth.
        const Projection cpu =
            projectTo(calibrated(*cpuFile(s + ".pickle")), [](LeverConfig& t) { t.precision = Precision::AmpBf16; });
        CHECK(cpu.peakAllocated < 0.9 * measuredPeak(*amp));
    }
}

TEST_CASE("Pure bf16 keeps what the recorded casts keep in fp32", "[whatif][precision][cpu]")
{
    // docs/whatif-model.md, "Precision". The llama's RMSNorm takes x.to(torch.float32), a no-op
    // in fp32 that the recorder names (`casts`): in bf16 it is an fp32 copy, saved for the
    // backward, and what follows it is fp32 until h.to(x.dtype). Halving every float tensor
    // projected this run -7.0%; the flow follows the casts.
    auto base = cpuFile("llama_graph.pickle");
    auto bf16 = cpuFile("llama_graph_bf16.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    const AutocastPlan& plan = cal.baseline.trace->pureFlowPlan();
    REQUIRE_FALSE(plan.empty());
    CHECK(plan.copies.size() >= 4); // an fp32 copy and a cast back per norm and iteration
    CHECK_FALSE(plan.earlyEnds.empty()); // the norm's fp32 result goes once cast back
    const Projection p = projectTo(cal, [](LeverConfig& t) { t.precision = Precision::Bf16; });
    REQUIRE(p.replayed);
    CHECK(p.replayTarget.dtypeFlow);
    CHECK(hasNote(p, "precision replayed by the recorded op graph"));
    checkAgainst(p, measuredPeak(*bf16), 0.02);
    // The same run recorded with shapes but no graph: every float halved, the upcasts only in
    // the band (-7.0%, docs/whatif-accuracy.md).
    const Calibration shapes = calibrated(*cpuFile("llama_base_shapes.pickle"));
    REQUIRE(shapes.baseline.trace);
    CHECK(shapes.baseline.trace->pureFlowPlan().empty());
    const Projection plain = projectTo(shapes, [](LeverConfig& t) { t.precision = Precision::Bf16; });
    CHECK_FALSE(plain.replayTarget.dtypeFlow);
    CHECK(plain.peakAllocated < 0.95 * measuredPeak(*bf16));
    CHECK(plain.peakAllocatedHigh >= measuredPeak(*bf16));
}
