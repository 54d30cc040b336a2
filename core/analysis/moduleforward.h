// SPDX-License-Identifier: MIT
#pragma once

// MemTracker's per-module moments of the forward (PyTorch's MemTracker tabulates pre-forward,
// peak forward and post-forward, then the same for the backward), from the allocations each
// module made in one iteration's forward. The trace says when a module allocates, not when its
// forward is entered or left, so the window runs from its first allocation to its last: "before"
// is what was alive just before the first, "after" what was alive after the last (a lower
// bound of the true post-forward moment), "peak" the most alive in between. Backward moments
// are not given: the backward's allocations name no module (autograd runs them without module
// frames, and the recorders name the module whose forward ran).

#include "core/analysis/memoryanalysis.h"

#include <cstdint>
#include <string>
#include <unordered_map>

namespace headroom {

struct ModuleForwardWindow {
    int64_t firstEvent = -1, lastEvent = -1, peakEvent = -1;
    int64_t beforeBytes = 0, peakBytes = 0, afterBytes = 0; ///< allocated bytes at each moment
    int64_t count = 0; ///< the module's allocations in the window
};

struct ModuleForwardWindows {
    int iteration = -1; ///< PhaseAnalysis::iterations index; -1 when the trace has no events
    /// By ModuleOf::key() (core/analysis/moduleof.h), and for named modules by the "n:" key of
    /// every parent, whose window holds its children's ("n:blocks" over "n:blocks.0.attn").
    std::unordered_map<std::string, ModuleForwardWindow> byKey;
    const ModuleForwardWindow* find(const std::string& key) const;
};

/// The windows of the iteration that holds `event` (the module view's selected event).
ModuleForwardWindows moduleForwardWindows(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                                          int64_t event);

} // namespace headroom
