// SPDX-License-Identifier: MIT
// The measured precision: read from the stacks where they tell it, and an unknown precision
// carried into the band under each open reading instead of assumed.
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/precisionevidence.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/ladder/whatifladder.h"
#include "core/whatif/terms/whatiflevers.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace headroom;

namespace {

constexpr double kGiB = double(1ull << 30);

PrecisionEvidence evidenceOf(std::initializer_list<std::pair<const char*, const char*>> frames)
{
    FrameTable t;
    for (const auto& [file, name] : frames)
        t.internFrame(file, 1, name);
    return PrecisionEvidence::read(t);
}

std::shared_ptr<const LoadedTrace> kk()
{
    return Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
}

/// The kk step's shape as stated (micro-batch 4, sequence 128, one device); its precision as given.
StatedConfig kkStated(std::optional<Precision> precision = std::nullopt)
{
    StatedConfig st;
    st.microBatch = 4;
    st.seq = 128;
    st.devices = 1;
    st.precision = precision;
    return st;
}

} // namespace

TEST_CASE("Precision evidence from the stacks", "[whatif][precision]")
{
    // The niu mixed-precision GPU runs carry these C++ frames; their fp32 twins do not.
    const auto amp = evidenceOf({{"train.py", "forward"},
                                 {"??", "at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, c10::DeviceType)"}});
    CHECK(amp.cppFrames);
    CHECK(amp.precision() == Precision::AmpBf16);

    const auto fp16 = evidenceOf({{"??", "at::autocast::WrapFunction_<>::call"},
                                  {"/usr/lib/python3/dist-packages/torch/amp/grad_scaler.py", "unscale_"}});
    CHECK(fp16.precision() == Precision::AmpFp16);

    const auto pure = evidenceOf({{"/x/torch/nn/modules/module.py", "bfloat16"}, {"/x/torch/nn/modules/module.py", "_apply"}});
    CHECK(pure.precision() == Precision::Bf16);

    // A function that merely ends in "half" is no conversion (rotary embeddings' rotate_half).
    const auto rotary = evidenceOf({{"/x/modeling_llama.py", "rotate_half"}});
    CHECK_FALSE(rotary.precision());

    // C++ stacks without autocast: fp32 or pure bf16, never autocast.
    const auto noAmp = evidenceOf({{"??", "torch::autograd::Engine::thread_main"}, {"train.py", "step"}});
    CHECK_FALSE(noAmp.precision());
    CHECK(noAmp.candidates() == std::vector<Precision>{Precision::Fp32, Precision::Bf16});

    // Python stacks only: nothing is ruled out.
    const auto python = evidenceOf({{"train.py", "step"}});
    CHECK(python.candidates() == std::vector<Precision>{Precision::Fp32, Precision::AmpBf16, Precision::Bf16});
}

TEST_CASE("An unknown precision is carried into the band, not assumed", "[whatif][precision]")
{
    // The kk full step (PyTorch 2.7, C++ stacks, no at::autocast frames): fp32 or pure bf16.
    const auto trace = kk();
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration open = calibrate(*trace, 0, a, kkStated());
    const MeasuredItem* item = open.item("precision");
    REQUIRE(item);
    CHECK(item->how == "unknown");
    CHECK(item->detail.find("no at::autocast") != std::string::npos);
    CHECK(open.baseline.config.precision == Precision::Fp32);
    CHECK(open.baseline.precisionAlternatives == std::vector<Precision>{Precision::Bf16});

    auto reading = [&](Precision p) { return calibrate(*trace, 0, a, kkStated(p)); };
    const Calibration fp32 = reading(Precision::Fp32);
    const Calibration bf16 = reading(Precision::Bf16);
    const DeviceSpec dev = deviceForCapacity(int64_t(48 * kGiB));

    // 8-bit Adam: a quarter of fp32 AdamW's state, half of pure bf16's; the band holds both.
    LeverConfig t = open.baseline.config;
    t.optimizer = OptimizerKind::Adam8bit;
    const Projection p = project(open.baseline, t, {}, dev);
    const Projection p32 = project(fp32.baseline, t, {}, dev);
    LeverConfig t16 = bf16.baseline.config;
    t16.optimizer = OptimizerKind::Adam8bit;
    const Projection p16 = project(bf16.baseline, t16, {}, dev);
    CHECK(p16.peak > p32.peak + 1.0 * kGiB); // the readings differ by gigabytes on this run
    // The stated fp32 reading replays the trace with the state at a quarter; the open one is
    // the terms' (its two readings give the state two ratios), within 1% of it.
    CHECK(p32.replayed);
    CHECK_FALSE(p.replayed);
    CHECK(p.peak == Approx(p32.peak).epsilon(0.01));
    CHECK(p.peakLow <= std::min(p32.peakLow, p16.peakLow));
    CHECK(p.peakHigh >= std::max(p32.peakHigh, p16.peakHigh));
    CHECK(std::any_of(p.notes.begin(), p.notes.end(),
                      [](const std::string& n) { return n.find("measured precision unknown") != std::string::npos; }));

    // Unmoved levers: both readings measure the same bytes, so the band does not widen.
    const Projection same = project(open.baseline, open.baseline.config, {}, dev);
    const Projection same32 = project(fp32.baseline, fp32.baseline.config, {}, dev);
    CHECK(same.peakHigh == Approx(same32.peakHigh).epsilon(0.001));

    // Moving the precision itself still needs the measured value (as the CLI says).
    LeverConfig toBf16 = open.baseline.config;
    toBf16.precision = Precision::Bf16;
    CHECK_THROWS_AS(open.require(toBf16), WhatIfMissingValue);
}

TEST_CASE("The ladder never counts on pure bf16 for a run that may already be bf16", "[whatif][precision]")
{
    const auto trace = kk();
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration open = calibrate(*trace, 0, a, kkStated());
    DeviceSpec dev = deviceForCapacity(int64_t(48 * kGiB));
    const Ladder l = buildLadder(open.baseline, open.baseline.config, {}, dev);
    for (const Rung& r : l.rungs) {
        if (r.projection.fits) {
            // A fitting rung fits under every reading: its high estimate is the worst of them.
            const Calibration bf16 = calibrate(*trace, 0, a, kkStated(Precision::Bf16));
            LeverConfig c = r.config;
            c.precision = c.precision == open.baseline.config.precision ? Precision::Bf16 : c.precision;
            const Projection under16 = project(bf16.baseline, c, {}, dev);
            CHECK(r.projection.peakHigh >= under16.peakHigh - 1.0);
        }
    }
}

TEST_CASE("Attention scores under autocast follow the device's op lists", "[whatif][precision]")
{
    WhatIfState s;
    s.calibrated = true;
    s.torchAutocast = true;
    s.params = 1e6;
    s.config.precision = Precision::Fp32;
    s.actLin = {1800, 0.1, Provenance::Measured};
    s.actQuad = {900, 0.1, Provenance::Measured};
    // CUDA: softmax stays fp32, so a score keeps 7 of its 9 bytes; the linear activations shrink 1.8x.
    const WhatIfState cuda = levers::withPrecision(s, Precision::AmpBf16);
    CHECK(cuda.actQuad.bytes == Approx(700));
    CHECK(cuda.actLin.bytes == Approx(1000));
    // Back from autocast to fp32 is the inverse.
    CHECK(levers::withPrecision(cuda, Precision::Fp32).actQuad.bytes == Approx(900));
    // CPU autocast narrows softmax too: the scores shrink like the rest.
    s.cpuAutocast = true;
    CHECK(levers::withPrecision(s, Precision::AmpBf16).actQuad.bytes == Approx(500));
    // Pure 16-bit halves every saved tensor on either device.
    s.cpuAutocast = false;
    CHECK(levers::withPrecision(s, Precision::Bf16).actQuad.bytes == Approx(500));
}
