// SPDX-License-Identifier: MIT
// A CPU or fake recording naming a GPU target: the projection adds the target's cuBLAS
// workspaces, which no recording off the GPU can show (docs/whatif-model.md, "The target
// device's workspaces").
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/targetworkspaces.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <string>

using namespace headroom;

namespace {

std::shared_ptr<const LoadedTrace> cpuFile(const std::string& name)
{
    return Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/" + name);
}

Snapshot configured(std::vector<std::pair<std::string, std::string>> config)
{
    Snapshot s;
    s.runConfig = std::move(config);
    return s;
}

double componentOf(const PhaseProjection& ph, const std::string& name)
{
    for (const Component& c : ph.components)
        if (c.name == name)
            return c.bytes;
    return -1;
}

} // namespace

TEST_CASE("The target's cuBLAS workspace by its architecture", "[whatif][target]")
{
    const double def = 4096.0 * 1024 * 2 + 16.0 * 1024 * 8; // 8519680 B, as the shared files hold
    const double mib = 1024.0 * 1024;
    CHECK(targetWorkspaces(configured({{"recorder", "headroom_cpu"}, {"target_device", "h100-80gb"}})).each ==
          32 * mib);
    const TargetWorkspaces a100 = targetWorkspaces(configured({{"recorder", "headroom_cpu"}, {"target_device", "a100-40gb"}}));
    CHECK(a100.each == def);
    CHECK(a100.eachHigh == def + 2 * mib);
    // A capacity without a name may be a Hopper: its 32 MiB is in the band.
    const TargetWorkspaces gib = targetWorkspaces(configured({{"recorder", "headroom_cpu"}, {"target_device", "80gib"}}));
    CHECK(gib.each == def);
    CHECK(gib.eachHigh == 34 * mib);
    // Recorded on its device (the workspaces are in the trace), or for no GPU: none added.
    CHECK(targetWorkspaces(configured({{"target_device", "h100-80gb"}})).each == 0);
    CHECK(targetWorkspaces(configured({{"recorder", "headroom_cpu"}})).each == 0);
}

TEST_CASE("A recording made off its GPU adds one workspace per matmul thread", "[whatif][target]")
{
    // fake_decoder.pickle: the decoder's training step in fake mode for an 80 GiB H100.
    auto t = cpuFile("fake_decoder.pickle");
    const Calibration cal = calibrate(*t, 0, analyzeDevice(*t, 0), {});
    const Projection p = project(cal.baseline, cal.baseline.config, WhatIfConstants{}, *devicePreset("80gib"));
    const double mib = 1024.0 * 1024;
    CHECK(componentOf(p.phases[0], "cublas_workspaces") == 32 * mib); // the forward's thread
    CHECK(componentOf(p.phases[1], "cublas_workspaces") == 64 * mib); // and autograd's backward thread
    CHECK(p.phases[1].total == Approx(p.phases[1].allocated + 64 * mib + componentOf(p.phases[1], "fragmentation") +
                                      componentOf(p.phases[1], "outside_allocator")));
    // The allocated peak is still the tensors' (what a CPU run can be checked against).
    CHECK(p.peakAllocated < 16 * mib);
    // The same step recorded for real without a target: nothing added.
    auto plain = cpuFile("decoder_base.pickle");
    const Calibration c2 = calibrate(*plain, 0, analyzeDevice(*plain, 0), {});
    const Projection q = project(c2.baseline, c2.baseline.config, WhatIfConstants{}, *devicePreset("80gib"));
    CHECK(componentOf(q.phases[1], "cublas_workspaces") < 0);
}
