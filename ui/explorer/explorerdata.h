// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/privatepools.h"
#include "core/analysis/timelinebands.h"
#include "core/io/loader.h"
#include "core/replay/allocationbands.h"
#include "core/whatif/ladder/allocatorverdict.h"
#include "core/whatif/query/whatifsession.h"

#include <QMetaType>

#include <memory>
#include <optional>
#include <string>

namespace headroom {

/// The capacity a file is judged against where the file does not tell it, or the user
/// overrode it: chosen for this file (the what-if panel), else assumed (Preferences).
struct CapacityChoice {
    std::optional<int64_t> chosen; ///< the user's, for this file: wins over the OOM record's
    int64_t assumed = 0;           ///< when neither the user nor the file tells it (0: none)
};

/// One device of a loaded file with everything the views draw from it, computed off the
/// GUI thread and immutable afterwards (shared by pointer, as heaptrack's ResultData).
struct ExplorerData {
    std::shared_ptr<const LoadedTrace> trace;
    size_t deviceIndex = 0;
    DeviceAnalysis analysis; ///< with the category series (the timeline's stacked areas)
    CapacityEstimate capacity;
    std::vector<Finding> findings;
    /// Whether an allocator setting alone avoids the device's OOM (none without an OOM record).
    std::optional<AllocatorVerdict> allocator;
    /// The what-if on the file alone (no stated values, default constants): the session the
    /// diagnosis's ladder used, handed to the what-if panel so it is not calibrated twice.
    std::shared_ptr<const WhatIfSession> whatIf;
    std::string calibrationError;
    /// The timeline's by-allocation bands at the default detail, built with the rest in
    /// the worker so that showing the analysis does not build them on the GUI thread.
    static constexpr int kDefaultBands = 2000;
    AllocationBands bands;
    /// Live bytes of each CUDA-graph / MemPool private pool after every event (empty for a
    /// file that names none): the timeline draws each apart.
    PrivatePoolCurves privatePools;

    const DeviceData& device() const { return trace->snapshot.devices[deviceIndex]; }
    const MemoryTimeline& timeline() const { return trace->timelines[deviceIndex]; }
    const FrameTable& frames() const { return trace->snapshot.frames; }
    int64_t eventCount() const { return static_cast<int64_t>(device().trace.count()); }

    /// Computes it all (seconds on a million events; call from a worker thread), judged
    /// against `capacity`. Throws LoadCancelled between its stages once `cancel` is set.
    static std::shared_ptr<const ExplorerData> compute(std::shared_ptr<const LoadedTrace> trace, size_t deviceIndex,
                                                       const CapacityChoice& capacity = {},
                                                       const std::atomic<bool>* cancel = nullptr);
};

using ExplorerDataPtr = std::shared_ptr<const ExplorerData>;

} // namespace headroom

Q_DECLARE_METATYPE(headroom::ExplorerDataPtr)
// A load's result crosses threads in queued signals (the load controller, the ranks view).
Q_DECLARE_METATYPE(std::shared_ptr<const headroom::LoadedTrace>)
