// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/targetworkspaces.h"

#include "core/model/runconfig.h"

#include <algorithm>
#include <cctype>

namespace headroom {

namespace {

// CUBLAS_WORKSPACE_CONFIG's default, ":4096:2:16:8" (2 x 4096 KiB + 8 x 16 KiB), PyTorch's
// aten/src/ATen/cuda/CublasHandlePool.cpp; sm_90 gets 32 MiB in PyTorch 2.x. Both sizes are the
// ones the shared GPU files hold (../shared/real_traces: 8519680 B once in a forward-only run
// and twice where a backward ran; 33554432 B in two runs).
constexpr double kDefaultWorkspace = 4096.0 * 1024 * 2 + 16.0 * 1024 * 8;
constexpr double kHopperWorkspace = 32.0 * 1024 * 1024;
// cuBLASLt's workspace beside it, where the version allocates one: 1 or 2 MiB per thread in
// the shared files, none in others.
constexpr double kLtWorkspaceHigh = 2.0 * 1024 * 1024;

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

} // namespace

TargetWorkspaces targetWorkspaces(const Snapshot& snapshot)
{
    TargetWorkspaces w;
    if (!recordedForGpuTarget(snapshot))
        return w;
    w.target = runSetting(snapshot, "target_device");
    const std::string t = lower(w.target);
    w.hopper = t.find("h100") != t.npos || t.find("h200") != t.npos;
    const bool older = t.find("a100") != t.npos || t.find("v100") != t.npos || t.find("a10") != t.npos ||
                       t.find("l4") != t.npos || t.find("4090") != t.npos || t.find("3090") != t.npos;
    w.each = w.hopper ? kHopperWorkspace : kDefaultWorkspace;
    // A capacity without a name ("80gib") may be a Hopper: its size is in the band.
    w.eachHigh = (w.hopper || older ? w.each : kHopperWorkspace) + kLtWorkspaceHigh;
    return w;
}

} // namespace headroom
