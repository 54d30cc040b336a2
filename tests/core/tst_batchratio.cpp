// SPDX-License-Identifier: MIT
// A micro-batch the trace does not tell, counted in ratios of the measured run
// (core/whatif/calibration/batchratio.h; docs/whatif-model.md, "Ratios of the measured run").
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/batchratio.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/query/whatifjson.h"
#include "core/whatif/ladder/whatifladder.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

using namespace headroom;

TEST_CASE("Ratios of the measured micro-batch are worded as ratios", "[whatif][ratio]")
{
    CHECK(batchRatioText(1, 4) == "x1/4");
    CHECK(batchRatioText(2, 4) == "x1/2");
    CHECK(batchRatioText(3, 4) == "x3/4");
    CHECK(batchRatioText(4, 4) == "x1");
    CHECK(batchRatioText(64, 4) == "x16");
    CHECK(microBatchText(8, 0) == "8");
    CHECK(microBatchText(0, 0) == "unknown");
    CHECK(microBatchText(6, 4) == "x3/2");
    LeverConfig c;
    c.microBatch = 8; // x2
    CHECK(countedFromRatio(c, 4, 16).microBatch == 32);
    CHECK(countedFromRatio(c, 0, 16).microBatch == 8); // already a count

    // A rung does not "set devices=1" where the count was unknown (0 projects as one device).
    LeverConfig unknown, one;
    unknown.devices = 0;
    one.devices = 1;
    CHECK(one.differences(unknown).empty());
    one.devices = 2;
    CHECK(one.differences(unknown) == std::vector<std::string>{"devices=2"});
}

TEST_CASE("A ratio of an unknown micro-batch projects as the count would", "[whatif][ratio]")
{
    // The kk full step tells neither its micro-batch nor its sequence.
    const auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration plain = calibrate(*trace, 0, a, {});
    REQUIRE_FALSE(plain.known("micro_batch"));
    const Calibration ratio = withBatchRatios(plain);
    CHECK(ratio.baseline.microBatchUnits == kBatchRatioUnits);
    CHECK(ratio.item("micro_batch")->how == "ratio");
    CHECK_NOTHROW(ratio.require([&] {
        LeverConfig t = ratio.baseline.config;
        t.microBatch = 2 * kBatchRatioUnits;
        return t;
    }()));
    // The calibration the CLI uses still refuses a count it cannot scale from.
    LeverConfig eight = plain.baseline.config;
    eight.microBatch = 8;
    CHECK_THROWS_AS(plain.require(eight), WhatIfMissingValue);

    StatedConfig four;
    four.microBatch = 4;
    const Calibration counted = calibrate(*trace, 0, a, four);
    const DeviceSpec dev = deviceForCapacity(80ll << 30);
    for (int units : {1, 2, 8, 16, 64}) {
        LeverConfig tr = ratio.baseline.config, tc = counted.baseline.config;
        tr.microBatch = units;
        tc.microBatch = units; // the measured 4 is kBatchRatioUnits: one unit is one sample
        const Projection pr = project(ratio.baseline, tr, {}, dev), pc = project(counted.baseline, tc, {}, dev);
        INFO("units " << units);
        CHECK(pr.peak == Approx(pc.peak).epsilon(1e-9));
        CHECK(pr.peakHigh == Approx(pc.peakHigh).epsilon(1e-9));
        CHECK(pr.microBatchUnits == kBatchRatioUnits);
        CHECK_FALSE(throughputKnown(pr));
        const nlohmann::json j = projectionJson(pr, ratio.measured, {}, dev);
        CHECK(j["config"]["micro_batch"].is_null());
        CHECK(j["config"]["micro_batch_ratio"].get<double>() == Approx(units / 4.0));
    }
    // The ladder words its micro-batch rungs as ratios too.
    LeverConfig big = ratio.baseline.config;
    big.microBatch = 64;
    const Ladder l = buildLadder(ratio.baseline, big, {}, deviceForCapacity(24ll << 30));
    bool ratioRung = false;
    for (const Rung& r : l.rungs)
        for (const std::string& lever : r.levers)
            if (lever.rfind("micro_batch=", 0) == 0) {
                CHECK(lever.find("micro_batch=x") == 0);
                ratioRung = true;
            }
    for (const Rung& r : l.rungs)
        if (r.title.find("micro-batch") != std::string::npos)
            CHECK(r.title.find("micro-batch x") != std::string::npos);
    CHECK(ratioRung);
}

TEST_CASE("The configuration line never states what the measured line calls unknown", "[whatif][measured]")
{
    // The kk full step does not tell its precision (no autocast frames: fp32 or pure bf16); the
    // lever is locked at the fp32 it is projected as, which is not a reading.
    const auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const Calibration cal = calibrate(*trace, 0, a, {});
    REQUIRE_FALSE(cal.known("precision"));
    CHECK(assumedSuffix(cal.measured, "precision", "fp32") == " (not measured: the trace does not tell it)");
    CHECK(assumedSuffix(cal.measured, "accum", "1").empty()); // read
    CHECK(assumedSuffix(cal.measured, "checkpointing", "none") == " (assumed)");
    CHECK(assumedSuffix(cal.measured, "checkpointing", "full").empty()); // moved off the assumption
    const Projection p = project(cal.baseline, cal.baseline.config, WhatIfConstants{}, deviceForCapacity(0));
    const std::string text = projectionText(p, cal.measured, deviceForCapacity(0));
    CHECK(text.find("fp32 (not measured: the trace does not tell it)") != std::string::npos);
    CHECK(p.verdict == Verdict::Unknown); // no capacity, no verdict
}
