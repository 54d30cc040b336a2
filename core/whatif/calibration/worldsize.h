// SPDX-License-Identifier: MIT
#pragma once
// The world size of a sharded run, read from the sizes of what its framework allocates
// (docs/categories-and-phases.md, "Frameworks' own memory"):
// - FSDP: each all-gather's output is world size x its input, exactly (FSDP pads every shard to
//   that), and one forward gathers every shard once;
// - DeepSpeed ZeRO-1/2 and Megatron's DistributedOptimizer: the fp32 master partition is the
//   flat parameters' 1/world size, at 4 bytes an element against the parameters' own width.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/calibration/traceconfig.h"

#include <optional>
#include <vector>

namespace headroom {

/// What the framework's buffers tell: the device count where they tell one (`devices` > 0),
/// else why not (`devices` 0, the item's detail says so, with every reading the sizes allow).
/// Nothing where the trace has none of those buffers.
struct WorldSizeReading {
    int devices = 0;
    MeasuredItem item;
};
/// `precisions`: the measured precisions the evidence leaves open (the parameters' width of
/// each weighs the flat buffers; FSDP's gathers need none).
std::optional<WorldSizeReading> readWorldSize(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                                              const std::vector<Precision>& precisions);

} // namespace headroom
