// SPDX-License-Identifier: MIT
// Several calibration runs of one job: the batch slope and the quadratic part measured
// directly.
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/whatifmultifit.h"
#include "generated.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headroom;
using headroom::test::generatedRun;

namespace {

Calibration calibrated(const std::string& path, int microBatch, int seq)
{
    const auto trace = Loader::load(path);
    StatedConfig st;
    st.microBatch = microBatch;
    st.seq = seq;
    st.precision = Precision::Bf16;
    st.devices = 1;
    return calibrate(*trace, 0, analyzeDevice(*trace, 0), st);
}

double measuredPeak(const std::string& path) { return double(Loader::load(path)->timelines[0].peakAllocated); }

double projectedAt(const WhatIfBaseline& base, int microBatch, int seq)
{
    LeverConfig t = base.config;
    t.microBatch = microBatch;
    t.seq = seq;
    return project(base, t, {}, deviceForCapacity(0)).peakAllocated;
}

} // namespace

TEST_CASE("Two runs at different micro-batches fit the batch slope", "[whatif][multifit]")
{
    const Calibration b2 = calibrated(generatedRun(2), 2, 1024);
    const Calibration b4 = calibrated(generatedRun(4), 4, 1024);
    const MultiFit fit = fitCalibrationRuns({b2, b4});
    CHECK(fit.microBatchFit);
    CHECK_FALSE(fit.sequenceFit);
    CHECK(fit.runs == 2);
    CHECK(fit.perSample > 0);
    CHECK(fit.residual < 0.02); // both runs reproduced

    // The measured configuration still projects its own peak.
    CHECK(projectedAt(fit.baseline, 2, 1024) == Approx(projectedAt(b2.baseline, 2, 1024)).epsilon(0.001));
    // Interpolated and extrapolated: within 3% of the measured runs.
    const double m1 = measuredPeak(generatedRun(1));
    const double one = projectedAt(b2.baseline, 1, 1024), two = projectedAt(fit.baseline, 1, 1024);
    INFO("micro-batch 1: measured " << m1 << ", one run " << one << ", two runs " << two);
    CHECK(std::abs(two - m1) / m1 < 0.03);
    CHECK(std::abs(two - m1) <= std::abs(one - m1) + 0.005 * m1);
}

TEST_CASE("Two runs at different sequence lengths fit the linear and quadratic parts", "[whatif][multifit]")
{
    const Calibration s1 = calibrated(generatedRun(2, 1024), 2, 1024);
    const Calibration s2 = calibrated(generatedRun(2, 2048), 2, 2048);
    const MultiFit fit = fitCalibrationRuns({s1, s2});
    CHECK(fit.sequenceFit);
    CHECK(fit.quadraticPerToken2 >= 0);
    CHECK(fit.residual < 0.03);
    CHECK(projectedAt(fit.baseline, 2, 2048) == Approx(measuredPeak(generatedRun(2, 2048))).epsilon(0.03));
}

TEST_CASE("Runs that move both levers, or nothing, are left out with a note", "[whatif][multifit]")
{
    const Calibration base = calibrated(generatedRun(2, 1024), 2, 1024);
    const Calibration both = calibrated(generatedRun(4, 2048), 4, 2048);
    const MultiFit fit = fitCalibrationRuns({base, both});
    CHECK_FALSE(fit.microBatchFit);
    CHECK_FALSE(fit.sequenceFit);
    REQUIRE(fit.notes.size() == 1);
    CHECK(fit.notes.front().find("left out") != std::string::npos);
    CHECK_THROWS_AS(fitCalibrationRuns({}), std::invalid_argument);
}
