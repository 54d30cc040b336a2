// SPDX-License-Identifier: MIT
#pragma once

// The projected run as a timeline to draw over the measured one (docs/whatif-model.md,
// "Replay"): the replay's allocated bytes after every event of the measured trace, with the
// band, the projected peak and the moment the projected run's requests first fail.

#include "core/replay/allocatorsimconfig.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/projection/whatifprojection.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct ProjectedTimeline {
    /// Per event of the measured trace; empty where the terms priced the projection (a lever
    /// the replay does not transform): then only the peak and its band are known.
    TraceProjector::Curve allocated;
    double peak = 0, peakLow = 0, peakHigh = 0; ///< the projection's allocated peak and band
    int64_t peakEvent = -1;                     ///< of the measured trace; -1 unknown
    int64_t oomEvent = -1; ///< the projected run's first request the simulated allocator refused; -1 none
    double capacity = 0;   ///< what the projection is judged against (0: unknown)
    std::vector<std::string> changes; ///< the levers moved from the measured run
    /// The projected run's requests through the caching-allocator model (a replayed projection).
    std::optional<SimulatedReserved> simulated;
    /// The projection's verdict once the simulation judged it (judgeBySimulation), and the one
    /// it replaced (Unknown: it kept the allocated peak's).
    Verdict verdict = Verdict::Unknown, verdictByRatio = Verdict::Unknown;

    bool hasCurve() const { return !allocated.central.empty(); }
};

/// `p` as the simulation behind `t` judged it (its simulated run, verdict and fit).
void adoptSimulation(Projection& p, const ProjectedTimeline& t);

/// The timeline of projection `p` of `base` over the first `events` events of its trace, its
/// requests simulated under `recorded` (the file's allocator settings) with the target's
/// expandable_segments. Seconds on a 10M-event trace: run it off the GUI thread.
ProjectedTimeline projectTimeline(const WhatIfBaseline& base, const Projection& p, size_t events,
                                  const AllocatorConfig& recorded);

} // namespace headroom
