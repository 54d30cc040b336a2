// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <vector>

namespace headroom {

/// A loaded file: the snapshot and each device's replayed timeline (same order as
/// `snapshot.devices`). Immutable and shared between threads once built.
struct LoadedTrace {
    Snapshot snapshot;
    std::vector<MemoryTimeline> timelines;
    uint64_t fileBytes = 0;

    const MemoryTimeline* timelineFor(int device) const;
};

} // namespace headroom
