// SPDX-License-Identifier: MIT
#pragma once

// What a GPU allocates inside the caching allocator that a recording made off the GPU (the CPU
// recorder, real or fake, naming a target_device) cannot show: cuBLAS's workspace, one per
// (handle, stream), so one per thread that runs matmuls, taken at its first matmul and kept.
// A training step has two such threads: the forward's and autograd's device thread for the
// backward (docs/whatif-model.md, "The target device's workspaces").

#include "core/model/snapshotmodel.h"

#include <string>

namespace headroom {

struct TargetWorkspaces {
    double each = 0;     ///< bytes per matmul thread, central (0: the recording ran on its device)
    double eachHigh = 0; ///< with what the band allows: an unknown architecture, cuBLASLt's own
    std::string target;  ///< the target_device named
    bool hopper = false; ///< sm_90 (H100, H200): PyTorch 2.x gives it 32 MiB
};

/// The workspaces of the file's target GPU where the CPU recorder wrote it for one; else zero.
TargetWorkspaces targetWorkspaces(const Snapshot& snapshot);

} // namespace headroom
