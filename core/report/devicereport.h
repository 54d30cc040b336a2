// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/ladder/allocatorverdict.h"
#include "core/whatif/query/fitjudgement.h"
#include "core/whatif/query/whatifsession.h"
#include "core/whatif/ladder/whatifladder.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct DeviceReportOptions {
    std::optional<int64_t> capacity; ///< the user's; else the OOM record's
    std::string capacitySource;      ///< where the user gave `capacity` ("" : "user")
    int64_t defaultCapacity = 0;     ///< assumed when neither tells it (Preferences); 0: none
    StatedConfig stated;             ///< measured values the trace cannot tell
    WhatIfConstants constants;
    /// Checked between the stages: set, compute() throws LoadCancelled.
    const std::atomic<bool>* cancel = nullptr;
    bool categorySeries = false; ///< also DeviceAnalysis::categories (the GUI's stacked areas)
};

/// Everything Headroom concludes about one device, assembled once for the CLI's `analyze`
/// and the GUI: the analysis, the capacity, the diagnosis, and the what-if's ladder whose
/// first fitting rung is the diagnosis's first move (one source of truth for "what first").
struct DeviceReport {
    DeviceAnalysis analysis;
    CapacityEstimate capacity;
    std::vector<Finding> findings;
    /// The what-if of this device on the file alone, which the ladder came from; the panel
    /// starts from it and its calibration() is the one the ladder used. Null: calibrationError
    /// says why.
    std::shared_ptr<const WhatIfSession> whatIf;
    std::string calibrationError; ///< why there is no calibration (or no ladder)
    /// The run as recorded at the capacity, as check --fit judges it; the capacity finding's
    /// verdict. None: no capacity, or the what-if cannot project (the finding judges the
    /// allocated peak, as check --fit's fallback does).
    std::optional<FitJudgement> fit;
    std::optional<Ladder> ladder; ///< for the capacity, when it is known and the step misses it
    std::optional<AllocatorVerdict> allocator; ///< for a device with an OOM record

    static DeviceReport compute(const LoadedTrace& trace, size_t deviceIndex, const DeviceReportOptions& options = {});
};

/// The capacity finding's first move, from the ladder: the rungs up to the first that fits
/// with its projected peak, or that none fits. Empty when the ladder has nothing to say.
/// `from` says where the ladder starts ("as run"; the GUI's: "at the what-if panel's levers").
std::string ladderFirstMove(const Ladder& ladder, const DeviceSpec& device, const std::string& from = "as run");

} // namespace headroom
