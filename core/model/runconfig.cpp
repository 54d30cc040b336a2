// SPDX-License-Identifier: MIT
#include "core/model/runconfig.h"

namespace headroom {

std::string runSetting(const Snapshot& snap, std::string_view key)
{
    for (const auto& [k, v] : snap.runConfig)
        if (k == key)
            return v;
    return {};
}

bool cpuRecorded(const Snapshot& snap) { return runSetting(snap, "recorder") == "headroom_cpu"; }

bool recordedForGpuTarget(const Snapshot& snap)
{
    return cpuRecorded(snap) && !runSetting(snap, "target_device").empty();
}

} // namespace headroom
