// SPDX-License-Identifier: MIT
#pragma once

// What a recorder's `headroom_config` (Snapshot::runConfig) says about where the run was
// recorded and for which device: one reading for the doctor, the autocast lists and the
// target's workspaces.

#include "core/model/snapshotmodel.h"

#include <string>
#include <string_view>

namespace headroom {

/// A value of the recorder's `headroom_config`; empty when absent.
std::string runSetting(const Snapshot& snap, std::string_view key);
/// The CPU recorder (real or fake) wrote it.
bool cpuRecorded(const Snapshot& snap);
/// The CPU recorder wrote it for a GPU it names (`target_device`): what that GPU adds, and
/// whose autocast lists apply, come from the target, not the trace.
bool recordedForGpuTarget(const Snapshot& snap);

} // namespace headroom
