// SPDX-License-Identifier: MIT
// A step the OOM cut short is projected whole (core/whatif/calibration/cutstep.h, issue 46 item 3).
#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/cutstep.h"
#include "core/whatif/query/whatifsession.h"
#include "core/whatif/calibration/whatifcalibration.h"

#include <catch2/catch.hpp>

#include <string>

using namespace headroom;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

Projection cutProjection(double allocated, double capacity)
{
    Projection p;
    p.peakAllocated = p.peakAllocatedLow = p.peakAllocatedHigh = allocated;
    p.peak = p.peakLow = allocated + 10 * kMiB; // context and fragmentation
    p.peakHigh = allocated + 20 * kMiB;
    p.capacity = capacity;
    p.verdict = Verdict::Fits; // the cut iteration fits, as judge() would have found
    p.marginLeft = marginLeft(p.peakHigh, 0, capacity);
    p.fits = true;
    return p;
}

} // namespace

TEST_CASE("A lever on a cut step moves the whole step's band by its share", "[whatif][cutstep]")
{
    const CutStep cut{"forward", int64_t(60 * kMiB), int64_t(80 * kMiB), int64_t(200 * kMiB)};
    // The cut iteration projects 60 MiB as run (the OOM's lower bound); full checkpointing halves
    // it to 30, so the whole step's 80 to 200 MiB becomes 40 to 100.
    Projection half = cutProjection(30 * kMiB, 150 * kMiB);
    projectWholeStep(half, 60 * kMiB, cut);
    CHECK(half.peakAllocated == Approx(40 * kMiB));
    CHECK(half.peakAllocatedHigh == Approx(100 * kMiB));
    CHECK(half.peakHigh == Approx(120 * kMiB));
    CHECK(half.fits); // the high end fits 150 MiB
    // On 100 MiB only the low end fits: it may fit, and it is not called a fit.
    Projection tight = cutProjection(30 * kMiB, 100 * kMiB);
    projectWholeStep(tight, 60 * kMiB, cut);
    CHECK_FALSE(tight.fits);
    CHECK(tight.verdict == Verdict::Tight);
    REQUIRE_FALSE(tight.notes.empty());
    CHECK(tight.notes.back().find("may fit") != std::string::npos);
    // Without a complete step to scale, the high end is unknown: never a fit.
    Projection unknown = cutProjection(30 * kMiB, 1000 * kMiB);
    projectWholeStep(unknown, 60 * kMiB, CutStep{"forward", int64_t(60 * kMiB), 0, 0});
    CHECK_FALSE(unknown.fits);
    CHECK(unknown.peakAllocated == Approx(30 * kMiB));
}

TEST_CASE("Only the iteration the OOM cut is a cut step", "[whatif][cutstep]")
{
    // Device 1 was cut by the OOM in its forward; devices 0 and 2 ran whole steps.
    const auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/imbalanced_oom.pickle");
    for (size_t d = 0; d < 3; ++d) {
        const DeviceAnalysis a = analyzeDevice(*trace, d);
        const Calibration cal = calibrate(*trace, d, a, StatedConfig{});
        CHECK(cal.cutStep.has_value() == (d == 1));
        if (d == 1) {
            CHECK(cal.cutStep->phase == "forward");
            CHECK(cal.cutStep->wholeHigh > cal.cutStep->wholeLow);
            // The ladder's calibration (in ratios) keeps it: every rung is of the whole step.
            WhatIfQuery q;
            q.measured = {trace, StatedConfig{}, nullptr};
            q.device = d;
            CHECK(WhatIfSession(q).ratioCalibration()->cutStep.has_value());
        }
    }
}

TEST_CASE("On the OOM record's own capacity nothing outside the allocator is counted again", "[whatif][cutstep]")
{
    // Device 1's OOM record gives 16.87 MiB: its allocator's reserved + the free memory the
    // recorder's cap left. A CUDA context (1 GiB assumed) is outside that figure already:
    // counted on top, the diagnosis read "misses by 62x" for a step whose whole need the
    // allocator's records put at 21 to 50 MiB.
    const auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/imbalanced_oom.pickle");
    const int64_t oomCapacity = estimateCapacity(*trace, 1, std::nullopt).bytes;
    REQUIRE(oomCapacity == 17690316);
    WhatIfQuery q;
    q.measured = {trace, StatedConfig{}, nullptr};
    q.device = 1;
    const WhatIfSession s(q);
    const Projection own = s.project(s.baseline().config, whatIfDevice(oomCapacity));
    CHECK(own.outsideLeftOut);
    CHECK(own.judgedContext == 0);
    CHECK(own.peak < 64 * kMiB); // the whole step's band, not a context on top of it
    CHECK(own.peakHigh < 64 * kMiB);
    CHECK(own.verdict == Verdict::DoesNotFit); // the whole step needs more than 16.87 MiB
    // Any other capacity is a device's whole memory: the context counts there.
    const Projection other = s.project(s.baseline().config, whatIfDevice(oomCapacity + 1));
    CHECK_FALSE(other.outsideLeftOut);
    CHECK(other.peak > own.peak + 512 * kMiB);
    // The ladder judges the same device the same way: its start is the projection's.
    LadderRequest r;
    r.device = whatIfDevice(oomCapacity);
    r.startUnits = BatchUnits::Measured;
    const Ladder l = s.ladder(r);
    CHECK(l.start.outsideLeftOut);
    CHECK(l.start.peak == Approx(own.peak));
    // No rung reads as progress by raising the peak (expandable segments' slack on a run of a
    // few MiB did), and a smaller micro-batch fits the allocator's share.
    for (const Rung& rung : l.rungs) {
        INFO(rung.title);
        CHECK(rung.projection.peak <= l.start.peak * 1.001);
    }
    CHECK(l.firstFit >= 0);
}
