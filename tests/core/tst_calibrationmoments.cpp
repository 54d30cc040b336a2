// SPDX-License-Identifier: MIT
// The calibration's measured moments against the Breakdown at the same event (issue 46 item 4):
// each number the what-if calls measured is what the Breakdown shows when that event is
// selected, and each moment sits in the phase it names.
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace headroom;

namespace {

std::vector<std::string> calibratedFiles()
{
    std::vector<std::string> files;
    for (const std::string dir : {std::string(HEADROOM_REAL_TRACES_DIR), std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu"})
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
            if (e.path().extension() == ".pickle")
                files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

/// Whether event `e` may hold the moment: the ends of the backward and the optimizer step are
/// in their phases; the start of backward is the highest point before the optimizer step: in
/// the backward, at its boundary, or in the forward where the forward peaks higher (a wide
/// linear layer's forward on an H100, gpu_series/sh_linear10kx50k_bs5000_grad: event 26 of a
/// forward that ends at 28), and the label says which (measuredEventPhases).
bool inNamedPhase(StepPhase moment, const std::vector<Phase>& phase, int64_t e)
{
    const Phase p = phase[size_t(e)];
    switch (moment) {
    case StepPhase::StartOfBackward: return p != Phase::Optimizer;
    case StepPhase::Backward: return p == Phase::Backward;
    case StepPhase::OptimizerStep: return p == Phase::Optimizer;
    }
    return false;
}

} // namespace

TEST_CASE("Each measured moment is the Breakdown at its event, in the phase it names", "[whatif][moments]")
{
    int checked = 0;
    for (const std::string& path : calibratedFiles()) {
        INFO(path);
        const auto trace = Loader::load(path);
        for (size_t d = 0; d < trace->snapshot.devices.size(); ++d) {
            const DeviceAnalysis a = analyzeDevice(*trace, d);
            if (a.iterationPeaks.empty())
                continue;
            const Calibration cal = calibrate(*trace, d, a, {});
            const WhatIfBaseline& s = cal.baseline;
            const MemoryTimeline& tl = trace->timelines[d];
            double gradients = 0;
            for (size_t i = 0; i < kStepPhaseCount; ++i) {
                const int64_t e = s.measuredEvents[i];
                if (e < 0)
                    continue;
                INFO("moment " << i << " at event " << e << " (" << s.measuredEventPhases[i] << ")");
                const Breakdown b = a.breakdownAt(tl, e);
                CHECK(double(b.total) == s.measuredAllocated[i]);
                CHECK(inNamedPhase(StepPhase(i), a.phases.eventPhase, e));
                CHECK(s.measuredEventPhases[i] == phaseKey(a.phases.eventPhase[size_t(e)]));
                gradients = std::max(gradients, double(b.byCategory[size_t(TensorCategory::Gradient)]));
                if (i == 0) // the weights are read at the start of backward
                    CHECK(s.weights.bytes == double(b.byCategory[size_t(TensorCategory::Parameter)]));
                ++checked;
            }
            CHECK(s.grads.bytes == gradients); // the gradients at their fullest moment
            // The projection at the measured levers carries the same events.
            const Projection p = project(s, s.config, WhatIfConstants{}, deviceForCapacity(0));
            for (size_t i = 0; i < kStepPhaseCount; ++i)
                if (p.phases[i].present && s.lateBackward == nullptr)
                    CHECK(p.phases[i].measuredEvent == s.measuredEvents[i]);
        }
    }
    CHECK(checked > 60);
}
