// SPDX-License-Identifier: MIT
#pragma once
// The world size of an FSDP run, read from the sizes of its all-gathers (docs/categories-and-
// phases.md, "Frameworks' own memory"): each all-gather's output is world size x its input,
// exactly (FSDP pads every shard to that), and one forward gathers every shard once.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/calibration/traceconfig.h"

#include <optional>

namespace headroom {

/// What the all-gathers tell: the device count where they tell one (`devices` > 0), else why
/// not (`devices` 0, the item's detail says so). Nothing where the trace has no FSDP gather.
struct WorldSizeReading {
    int devices = 0;
    MeasuredItem item;
};
std::optional<WorldSizeReading> readFsdpWorldSize(const LoadedTrace& trace, size_t deviceIndex,
                                                  const DeviceAnalysis& a);

} // namespace headroom
