// SPDX-License-Identifier: MIT
#pragma once

// The projected run's requests through the caching-allocator model (docs/whatif-model.md,
// "Reserved memory"): the replay's resized allocations, in the trace's order, served by
// AllocatorSim under a PYTORCH_CUDA_ALLOC_CONF setting and a capacity. Reserved memory and
// the OOM then come from the simulation, not from a fragmentation ratio.

#include "core/replay/allocatorsimconfig.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/projection/whatifprojection.h"

#include <cstdint>
#include <optional>

namespace headroom {

struct ProjectedAllocatorRun {
    int64_t reservedPeak = 0;
    int64_t reservedPeakEvent = -1; ///< event of the measured trace
    struct Oom {
        int64_t event = -1; ///< the request of the measured trace whose projected size failed
        int64_t size = 0;
        int64_t reserved = 0;
    };
    std::optional<Oom> oom; ///< the first request the capacity refused; the run stops there
    int64_t requests = 0;
};

/// The central reading at the target, on one stream. `capacity` 0: unlimited.
ProjectedAllocatorRun simulateProjected(const TraceProjector& tp, const ReplayTarget& target,
                                        const AllocatorConfig& config, int64_t capacity);

/// Fills `p.simulated` for a replayed projection: the target's expandable_segments over the
/// file's other allocator settings, against the capacity less the central estimate of memory
/// outside the allocator (the CUDA context); then judgeBySimulation.
void simulateReserved(Projection& p, const WhatIfBaseline& base, const AllocatorConfig& recorded);
/// The verdict from the simulated run (docs/whatif-model.md, "Reserved memory"): an OOM in
/// it does not fit; a run it serves is at least tight. `verdictByRatio` keeps what it replaced.
void judgeBySimulation(Projection& p);

} // namespace headroom
