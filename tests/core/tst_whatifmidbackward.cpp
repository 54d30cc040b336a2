// SPDX-License-Identifier: MIT
// A calibration read inside the backward, checked on real CPU recordings of the small convnet
// (tests/data/cpu/convnet_*.pickle, Debian's PyTorch 1.13, micro-batch 2, 32x32 images): it
// peaks a third of the way into its backward, where the last blocks' weight gradients,
// activation gradients and the earlier blocks' activations are alive together.
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/whatifcalibration.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headroom;

namespace {

const std::string kDir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";

double measuredPeak(const std::string& file)
{
    return double(Loader::load(kDir + file)->timelines[0].peakAllocated);
}

} // namespace

TEST_CASE("Autocast from a reading inside the backward: only the layers not yet reached hold casts",
          "[whatif][rules][precision]")
{
    const auto trace = Loader::load(kDir + "convnet_base.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    const WhatIfBaseline& b = cal.baseline;
    REQUIRE(b.config.precision == Precision::Fp32);
    REQUIRE(b.config.accum == 1);
    // The reading is inside the backward: this backward had allocated part of the weight
    // gradients (72% of their bytes), none alive from before it.
    REQUIRE(b.backwardDone > 0.5);
    REQUIRE(b.backwardDone < 1.0);
    CHECK(b.backwardDone == Approx(b.gradFwdFraction));
    // Its batch temporaries are mostly gradients of the convolutions' outputs, allocated after
    // the first weight gradient (autocast makes them bf16 like those outputs on the CPU); the
    // rest (0.2) is the batch itself, an input since the process pool's __init__ frames under
    // every stack of this recording stopped reading as a model being built (issue 27).
    CHECK(b.logitsGradShare > 0.75);

    LeverConfig t = b.config;
    t.precision = Precision::AmpBf16;
    const Projection p = project(b, t, {}, deviceForCapacity(0));
    // The bf16 casts of the weights are freed with their layer's saved tensors when its
    // backward runs: half a weight per weight not yet reached, not half of every weight.
    const double castsAhead = 0.5 * b.weights.bytes * (1.0 - b.backwardDone);
    CHECK(p.componentAt(StepPhase::StartOfBackward, "autocast_cache") == Approx(castsAhead));
    // Whether autocast narrows the activation gradients depends on the ops and the device
    // (CUDA keeps softmax and its gradients fp32): they keep their size, and the band reaches
    // down to narrowing them like the saved activations.
    const Projection p0 = project(b, b.config, {}, deviceForCapacity(0));
    CHECK(p.componentAt(StepPhase::StartOfBackward, "temporaries_batch") ==
          Approx(p0.componentAt(StepPhase::StartOfBackward, "temporaries_batch")));
    // Against the run recorded under autocast: +13.6% with every cast alive, +7.3% now; the
    // issue's target for precision is 10%, and the band holds the measurement.
    const double measured = measuredPeak("convnet_amp_bf16.pickle");
    CHECK(std::abs(p.peakAllocated - measured) / measured < 0.08);
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(measured <= p.peakAllocatedHigh);
}

TEST_CASE("Gradients alive from before the backward say nothing about how far it got", "[whatif][rules][precision]")
{
    // With four micro-steps the reading is in a later micro-step's backward, where every
    // gradient was allocated by the first one: every layer still holds its casts.
    const auto trace = Loader::load(kDir + "convnet_accum4.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    const WhatIfBaseline& b = cal.baseline;
    REQUIRE(b.config.accum == 4);
    CHECK(b.gradFwdFraction == Approx(1.0));
    CHECK(b.backwardDone == 0.0);
    LeverConfig t = b.config;
    t.precision = Precision::AmpBf16;
    CHECK(project(b, t, {}, deviceForCapacity(0)).componentAt(StepPhase::StartOfBackward, "autocast_cache") ==
          Approx(0.5 * b.weights.bytes));
}

TEST_CASE("The loss's gradients stay as wide as the loss: a reading at the start of backward has none of "
          "the network's",
          "[whatif][rules][precision]")
{
    // The decoder's reading is at the start of its backward: its batch temporaries are the
    // fp32 gradients of the loss's log-probabilities and logits, allocated before any weight
    // gradient, and autocast does not narrow them.
    const auto trace = Loader::load(kDir + "decoder_base.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    CHECK(cal.baseline.logitsGradShare == 0.0);
    LeverConfig t = cal.baseline.config;
    t.precision = Precision::AmpBf16;
    CHECK(project(cal.baseline, t, {}, deviceForCapacity(0)).componentAt(StepPhase::StartOfBackward, "temporaries_batch") ==
          Approx(cal.baseline.logits.bytes));
}

TEST_CASE("Accumulation from a reading inside the backward: the boundary, with every activation, is read too",
          "[whatif][rules]")
{
    const auto trace = Loader::load(kDir + "convnet_base.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    const WhatIfBaseline& b = cal.baseline;
    // The second reading is the forward/backward boundary, where no gradient exists yet and
    // every activation is alive.
    REQUIRE(b.lateBackward);
    CHECK(b.lateBackward->gradFwdFraction == 0.0);
    CHECK(b.lateBackward->actLin.bytes > b.actLin.bytes);
    // At the measured configuration the point inside the backward is the trace's own peak.
    const Projection same = project(b, b.config, {}, deviceForCapacity(0));
    CHECK(same.peakAllocated == Approx(measuredPeak("convnet_base.pickle")));

    // With four micro-steps the gradients are alive from the second micro-step's forward on:
    // the step peaks at the boundary plus every gradient, above the point inside the
    // backward plus every gradient (-5.3% when only that point was read).
    LeverConfig t = b.config;
    t.accum = 4;
    const Projection p = project(b, t, {}, deviceForCapacity(0));
    const double measured = measuredPeak("convnet_accum4.pickle");
    CHECK(std::abs(p.peakAllocated - measured) / measured < 0.03);
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(measured <= p.peakAllocatedHigh);
}
