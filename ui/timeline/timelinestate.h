// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/tensorcategory.h"
#include "core/replay/allocationbands.h"
#include "core/util/minmaxpyramid.h"
#include "ui/explorer/explorerdata.h"
#include "ui/explorer/selection.h"

#include <QString>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace headroom {

struct DeviceData;
struct LoadedTrace;
struct MemoryTimeline;
struct ProjectedTimeline;
struct TimelineCurves;

/// What TimelineView shows, as its drawing layers and mouse handling read it: the device,
/// its curves and analysis, the selection, bookmarks, the sampled category areas, the
/// allocation bands and the simulated reserved curve, and the mapping between events and
/// x-axis keys. The view owns and writes it; everyone else gets it const. Nothing here
/// knows about pixels, so the mapping is testable without a widget.
///
/// Keys: in event-index mode the key of event i is i (the state before the first event
/// sits at -1); in time mode it is the event's time since the first event, in the unit of
/// TimelineCurves::timeUnitUs (the state before the first event sits at 0).
struct TimelineState {
    TimelineState();

    std::shared_ptr<const LoadedTrace> trace;
    ExplorerDataPtr data; ///< null until the analysis arrives
    const DeviceData* device = nullptr;
    const MemoryTimeline* timeline = nullptr;
    int deviceIndex = -1;
    std::shared_ptr<const TimelineCurves> curves; ///< never null

    /// The preferred x axis; a device without time_us shows event indices regardless.
    bool preferTime = true;
    /// By allocation (bands) rather than by category (stacked areas).
    bool byAllocation = false;

    SelectionState selection;
    std::vector<std::pair<int64_t, QString>> bookmarks; ///< event, title
    AllocationBands bands;

    /// The category areas' samples: x keys and cumulative tops by stack position.
    std::vector<double> areaKeys;
    std::vector<std::array<double, kTensorCategoryCount>> areaStacks;
    bool areaTotalOnly = true; ///< no category is present: the areas are the total alone

    /// Reserved bytes after each event as an allocator simulation has them; empty: none.
    std::vector<int64_t> simulatedReserved;
    MinMaxPyramid simulatedPyramid;
    QString simulatedLabel;

    /// The what-if's projected run drawn over the measured one; null: none.
    std::shared_ptr<const ProjectedTimeline> projected;
    QString projectedLabel;

    /// Shows `deviceIndex` of `trace` (nothing when either is out of range): device and
    /// timeline pointers set, the analysis, selection and simulated curve dropped. The
    /// curves are the caller's (prepared by the load worker or computed).
    void setDevice(std::shared_ptr<const LoadedTrace> trace, int deviceIndex);
    /// No trace at all.
    void clear();

    int64_t eventCount() const;
    bool hasTime() const;
    /// The keys are event indices: preferred, or the device has no time.
    bool eventIndexAxis() const { return !preferTime || !hasTime(); }
    /// The x key of an event; -1 is the state before the first event.
    double keyOf(int64_t event) const;
    /// The event shown at `key`: the last one at or before it, clamped to the events;
    /// -1 without events.
    int64_t eventAtKey(double key) const;
    /// The first event whose key is at or after `key`, eventCount() when none.
    int64_t firstEventAtOrAfterKey(double key) const;
    /// The simulated reserved bytes after `event` (-1: before the first); -1 when there
    /// is no simulated curve or it does not reach that far.
    int64_t simulatedReservedAt(int64_t event) const;
    /// The projected run's allocated bytes after `event`; -1 without a projected curve.
    int64_t projectedAt(int64_t event) const;
};

} // namespace headroom
