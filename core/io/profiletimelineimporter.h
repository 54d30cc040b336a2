// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <nlohmann/json.hpp>

namespace headroom {

/// `prof.export_memory_timeline(...)` outputs (docs/formats.md, "Profiler memory timelines"): the raw form, a list of
/// `[timestamp_ns, action, numbytes, category]` int rows, and the `[times, sizes]` form
/// (times in µs, rows of 9 cumulative per-category byte counts).
///
/// Model choice: both are turned into ordinary trace events (so the timeline, the
/// allocation list and the category views all work unchanged) with an exact category per
/// event and the exact total after every event in `TraceEvents::totalAllocated`, which
/// replay uses as the curve. Raw rows have no addresses: each CREATE/PREEXISTING gets a
/// synthetic address, a DESTROY frees the most recent live tensor of the same size and
/// category, and an INCREMENT_VERSION pair (-n old category, +n new) re-categorises that
/// tensor (a free and an alloc at the same synthetic address). In the `[times, sizes]`
/// form each category is one band: a change at a timestamp is one event that replaces
/// the band's allocation (an alloc at the band's address, or a free when it drops to 0).
class ProfileTimelineImporter {
public:
    static bool acceptsRaw(const nlohmann::json& root);
    static bool acceptsTimesSizes(const nlohmann::json& root);
    static void importRaw(const nlohmann::json& root, Snapshot& snapshot);
    static void importTimesSizes(const nlohmann::json& root, Snapshot& snapshot);
};

} // namespace headroom
