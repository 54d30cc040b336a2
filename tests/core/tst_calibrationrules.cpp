// SPDX-License-Identifier: MIT
// Calibration rules checked on a real CPU recording (tests/data/cpu/decoder_base.pickle,
// Debian's PyTorch 1.13, micro-batch 2, sequence 128, fp32): what grows with the batch.
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/laws/stackreadings.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headroom;

TEST_CASE("A small model's logits grow with the batch although they are under 1 MiB", "[whatif][rules]")
{
    const auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/decoder_base.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    REQUIRE(cal.known("micro_batch"));
    const WhatIfBaseline& b = cal.baseline;
    // The logits (b*s*V floats, 512 KiB here) and the loss's gradients have a token dimension.
    CHECK(b.logits.bytes >= 512.0 * 1024);
    LeverConfig t = b.config;
    t.microBatch = 2 * b.config.microBatch;
    const Projection p0 = project(b, b.config, {}, deviceForCapacity(0));
    const Projection p1 = project(b, t, {}, deviceForCapacity(0));
    CHECK(p1.componentAt(StepPhase::StartOfBackward, "temporaries_batch") ==
          Approx(2 * p0.componentAt(StepPhase::StartOfBackward, "temporaries_batch")));
}

TEST_CASE("Activations in the allocator's smallest block follow the sequence, not the batch", "[whatif][rules]")
{
    WhatIfBaseline b;
    b.calibrated = true;
    b.config.microBatch = 2;
    b.config.seq = 64;
    b.config.precision = Precision::Fp32;
    b.actSmall = {192.0 * 1024, 0.01, Provenance::Measured};
    auto stored = [&](int microBatch, int seq) {
        LeverConfig t = b.config;
        t.microBatch = microBatch;
        t.seq = seq;
        return project(b, t, {}, deviceForCapacity(0)).componentAt(StepPhase::StartOfBackward, "activations_linear");
    };
    CHECK(stored(1, 64) == Approx(192.0 * 1024));     // no smaller than a block
    CHECK(stored(4, 64) == Approx(192.0 * 1024));     // at half a block, twice the batch fills it
    CHECK(stored(8, 64) == Approx(2 * 192.0 * 1024)); // then it grows
    CHECK(stored(2, 128) == Approx(2 * 192.0 * 1024)); // one per step of the sequence
}

TEST_CASE("Autocast casts are at most one per weight; the rest of that size are activations", "[whatif][rules]")
{
    // Real CPU recordings under bf16 autocast where micro-batch x sequence equals the hidden
    // size: the b*s*h activations have the casts' size. Counted as casts they did not grow
    // with the batch (-13.1% at twice the batch); capped at one per weight, -1.5%.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    const auto before = Loader::load(dir + "amp_bs_eq_h_mb2.pickle");
    const auto after = Loader::load(dir + "amp_bs_eq_h_mb4.pickle");
    const Calibration cal = calibrate(*before, 0, analyzeDevice(*before, 0), {});
    REQUIRE(cal.baseline.config.precision == Precision::AmpBf16);
    CHECK(cal.baseline.autocastCache.bytes <= 0.5 * cal.baseline.weights.bytes + 1.0);
    LeverConfig t = cal.baseline.config;
    t.microBatch = 4;
    const double projected = project(cal.baseline, t, {}, deviceForCapacity(0)).peakAllocated;
    const double measured = double(after->timelines[0].peakAllocated);
    CHECK(std::abs(projected - measured) / measured < 0.05);
}

TEST_CASE("An optimizer outside torch.optim: its unclassified state does not grow with the batch", "[whatif][rules]")
{
    // A hand-written Adam whose moments live in one flat 1.08 MiB buffer created outside any
    // annotated phase: unclassified, alive through every iteration. Scaled with the batch it
    // added a megabyte per doubling; held constant, micro-batch 2 -> 4 lands within 1%.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    const auto before = Loader::load(dir + "extopt_mb2.pickle");
    const auto after = Loader::load(dir + "extopt_mb4.pickle");
    const DeviceAnalysis a = analyzeDevice(*before, 0);
    CHECK(a.atEnd.byCategory[size_t(TensorCategory::Unknown)] >= (1 << 20));
    const Calibration cal = calibrate(*before, 0, a, {});
    CHECK(cal.baseline.constTemp.bytes >= (1 << 20));
    LeverConfig t = cal.baseline.config;
    t.microBatch = 4;
    const double projected = project(cal.baseline, t, {}, deviceForCapacity(0)).peakAllocated;
    const double measured = double(after->timelines[0].peakAllocated);
    CHECK(std::abs(projected - measured) / measured < 0.01);
}

TEST_CASE("A forward under no_grad holds the casts of the weights it has used", "[whatif][rules]")
{
    // The CPU decoder's forward under no_grad, fp32 and under bf16 autocast. At the fp32
    // peak (the second block's scores) the forward has made five of its nine Linear calls
    // (the first block's four, the second's qkv); autocast caches those weights' casts with
    // grad off too. Counted as none, the projection was -10.3%.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    const auto fp32 = Loader::load(dir + "decoder_infer_base.pickle");
    const auto amp = Loader::load(dir + "decoder_infer_amp_bf16.pickle");
    const Calibration cal = calibrate(*fp32, 0, analyzeDevice(*fp32, 0), {});
    REQUIRE(cal.baseline.forwardOnly);
    CHECK(cal.baseline.forwardWeightUses == Approx(5.0 / 9.0));
    const MeasuredItem* uses = cal.item("autocast_weight_uses");
    REQUIRE(uses);
    CHECK(uses->value == "5 of 9");
    CHECK(uses->how == "read"); // counted; "assumed" (half) where no torch layer shows it
    LeverConfig t = cal.baseline.config;
    t.precision = Precision::AmpBf16;
    const Projection p = project(cal.baseline, t, {}, deviceForCapacity(0));
    const double measured = double(amp->timelines[0].peakAllocated);
    CHECK(std::abs(p.peakAllocated - measured) / measured < 0.03);
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
}

TEST_CASE("A no_grad forward that frees its scores before its peak still read FlashAttention off", "[whatif][rules]")
{
    // decoder_infer peaks in an FFN, each layer's scores freed by then: the live set at the
    // peak has no b*s^2 tensor, but the run materialised them (its softmax outputs, read b*s^2
    // by their stack). The reading is from every allocation's law, not the peak's.
    const auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/decoder_infer_base.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    REQUIRE(cal.baseline.forwardOnly);
    CHECK_FALSE(cal.baseline.config.flashAttention);
    bool found = false;
    for (const MeasuredItem& m : cal.measured)
        if (m.key == "flash_attention") {
            found = true;
            CHECK(m.value == "off");
            CHECK(m.how == "read");
        }
    CHECK(found);
}

namespace {

/// A CPU fixture loaded on its own (the loader keeps no cache) with its recorded shapes dropped,
/// as a GPU snapshot of the same run would be.
std::shared_ptr<const LoadedTrace> withoutShapes(const std::string& name)
{
    const auto t = std::const_pointer_cast<LoadedTrace>(
        Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/" + name));
    for (DeviceData& d : t->snapshot.devices)
        d.trace.tensors.clear();
    return t;
}

/// `cal` projected to four times its sequence against `at4x`, the same run recorded there:
/// the central within `eps`, the band around the measurement.
void checkAt4x(const Calibration& cal, const LoadedTrace& at4x, double eps)
{
    LeverConfig t = cal.baseline.config;
    t.seq *= 4;
    const Projection p = project(cal.baseline, t, {}, deviceForCapacity(0));
    const double measured = double(at4x.timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(eps));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
}

Calibration calibrated(const LoadedTrace& t) { return calibrate(t, 0, analyzeDevice(t, 0), {}); }

MeasuredItem itemOf(const Calibration& cal, const std::string& key)
{
    for (const MeasuredItem& m : cal.measured)
        if (m.key == key)
            return m;
    return {};
}

} // namespace

TEST_CASE("No scores seen is not FlashAttention read", "[whatif][rules]")
{
    // The CPU convnet without its shapes: no tensor is b*s^2 and no frame names a fused
    // attention kernel. Nothing read FlashAttention (a model without attention); it is assumed.
    const auto bare = withoutShapes("convnet_base.pickle");
    const MeasuredItem m = itemOf(calibrate(*bare, 0, analyzeDevice(*bare, 0), {}), "flash_attention");
    CHECK(m.value == "on");
    CHECK(m.how == "assumed");
}

TEST_CASE("Scores over a class token are read from their sizes", "[whatif][rules]")
{
    // docs/whatif-model.md, "Laws", stage 4b. The CPU vit without its shapes: its scores are
    // b*h*(s+1)^2 (64 patches and the class token), no multiple of b*s^2, made by
    // Tensor.softmax under a forward that names no attention. Read as b*s, four times the
    // sequence projected -33.8% with a band 5% wide; with the offset read from the sizes,
    // within 1% with the b*s reading as the band's low end. The truth is the same run at
    // sequence 256, without its shapes too.
    const auto base = withoutShapes("vit_base.pickle");
    const auto at4x = withoutShapes("vit_seq4.pickle");
    const Calibration cal = calibrated(*base);
    REQUIRE(cal.baseline.trace);
    CHECK(cal.baseline.trace->laws().tokenOffset() == 1);
    CHECK(itemOf(cal, "flash_attention").value == "off");
    checkAt4x(cal, *at4x, 0.02);
}

TEST_CASE("Scores at a size b*s shares are read from the lines of a call handed q, k and v", "[whatif][rules]")
{
    // docs/whatif-model.md, "Laws", stage 4. The CPU llama forward under no_grad without its
    // shapes: 2 heads = micro-batch 2 and head width 64 = sequence 64, so the scores are as
    // large as q, k, v and the attention's output, and the coincidence guard left them b*s: four
    // times the sequence projected -12.3%. Its scaled_dot_product_attention is handed q, k and v
    // (no module call inside it): the last tensor of each line above the one that calls the
    // softmax is a score (einsum's copies of q and k before it at that line are not), what the
    // softmax's line makes after it (the probabilities times v) is not.
    const auto base = withoutShapes("llama_infer_base.pickle");
    const auto at4x = withoutShapes("llama_infer_seq4.pickle");
    checkAt4x(calibrated(*base), *at4x, 0.01);
    // Trained, the copies einsum saves for its backward are alive at the peak: read as scores
    // (every tensor above the softmax's line) they put four times the sequence 12.9% high.
    checkAt4x(calibrated(*withoutShapes("llama_base.pickle")), *withoutShapes("llama_seq4.pickle"), 0.01);
}

TEST_CASE("A class grown more than 4x from its size alone keeps the constant reading", "[whatif][rules]")
{
    // Issue 50: a size that divides by b*s by coincidence (a weight's cast, a buffer) does not
    // grow, and nothing in a file without shapes says which do. At eight times the sequence every
    // tensor the decoder's laws read from sizes and stacks grows 8x or more, so the band's low end
    // is every one of them kept: about the measured peak. With the recorded shapes it is not.
    const auto bare = withoutShapes("decoder_base.pickle");
    const Calibration cal = calibrated(*bare);
    LeverConfig t = cal.baseline.config;
    t.seq *= 8;
    const Projection p = project(cal.baseline, t, {}, deviceForCapacity(0));
    const double base = double(bare->timelines[0].peakAllocated);
    CHECK(p.peakAllocatedLow <= 1.02 * base);
    CHECK(p.peakAllocated > 4 * base);
    const auto recorded = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/decoder_base_shapes.pickle");
    const Calibration withShapes = calibrated(*recorded);
    LeverConfig u = withShapes.baseline.config;
    u.seq *= 8;
    CHECK(project(withShapes.baseline, u, {}, deviceForCapacity(0)).peakAllocatedLow > 2 * base);
}

TEST_CASE("A fused attention kernel is named by a kernel or a library, not a user's file", "[whatif][rules]")
{
    // CS336's `scaled_dot_product_attention.py` (the niu runs) computes q k^T itself: its name
    // does not say FlashAttention ran.
    FrameTable ft;
    auto stackOf = [&](const char* file, const char* name) {
        const std::vector<uint32_t> frames = {ft.internFrame(file, 40, name)};
        return ft.internStack(frames);
    };
    CHECK_FALSE(fusedAttentionStack(ft, stackOf("/home/u/cs336_basics/modules/scaled_dot_product_attention.py", "forward")));
    CHECK(fusedAttentionStack(
        ft, stackOf("/usr/lib/python3/dist-packages/transformers/integrations/sdpa_attention.py", "sdpa_attention_forward")));
    CHECK(fusedAttentionStack(ft, stackOf("??", "at::_ops::_scaled_dot_product_flash_attention::call")));
    CHECK(fusedAttentionStack(ft, stackOf("/opt/venv/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py",
                                          "_flash_attn_forward")));
}
