// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"
#include "core/replay/allocatorsimconfig.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// The replay of one device's allocation requests through AllocatorSim.
///
/// Under the recorded setting it checks the simulation against the recording: each request's
/// simulated segment events against the recorded ones, and the reserved curve. Where they
/// part, it says where and why and goes on from the recorded state (the recorded segment
/// and placement are adopted). Under another setting it answers with the reserved peak and
/// whether the recorded OOM would have happened, for a capacity.
struct AllocatorReplayOptions {
    /// The setting to replay under; nullopt: the one the snapshot recorded.
    std::optional<AllocatorConfig> config;
    /// Device bytes the allocator may reserve; 0: from the OOM record (reserved + device_free),
    /// else unlimited.
    int64_t capacity = 0;
    bool keepCurve = false; ///< fill AllocatorReplayResult::simulatedReserved
};

struct AllocatorReplayResult {
    struct Divergence {
        int64_t event = -1;
        std::string recorded;
        std::string simulated;
        std::string why;
    };
    struct Oom {
        int64_t event = -1;
        int64_t size = 0;        ///< the request (rounded)
        int64_t reserved = 0;    ///< simulated reserved when it failed
        int64_t allocated = 0;   ///< simulated allocated block bytes
        int64_t cachedFree = 0;  ///< reserved but unallocated
        int64_t largestFree = 0; ///< the largest cached free block
    };

    int device = 0;
    AllocatorConfig config;
    bool recordedSetting = true;   ///< replayed under the snapshot's own setting
    bool settingFromFile = false;  ///< the snapshot had allocator_settings
    int64_t events = 0;
    int64_t requests = 0;          ///< alloc and oom entries replayed
    bool initialStateReconstructed = false; ///< memory existed before the first event

    // Under the recorded setting: the comparison.
    int64_t segmentEventsRecorded = 0;
    int64_t segmentEventsSimulated = 0;
    int64_t segmentEventsMatched = 0;
    int64_t maxReservedDifference = 0;
    int64_t maxReservedDifferenceEvent = -1;
    int64_t recordedReservedPeak = 0;
    int64_t placementDivergences = 0; ///< allocations the simulation put elsewhere
    int64_t unmatchedFrees = 0;       ///< frees of addresses the replay never saw allocated
    std::optional<Divergence> firstDivergence;

    // Under any setting.
    int64_t reservedPeak = 0;
    int64_t reservedPeakEvent = -1;
    /// The simulation followed the recording (the recorded setting, on a file whose segments were
    /// recorded); false on a CPU recording, whose simulation runs free with nothing to compare.
    bool followedRecording = false;
    int64_t capacity = 0; ///< 0: unlimited
    std::string capacitySource; ///< "--capacity", "the OOM record", "" (unlimited)
    int64_t recordedOomEvent = -1;
    int64_t recordedOomSize = 0;
    std::optional<bool> oomAvoided; ///< nullopt: the recording has no OOM
    std::optional<Oom> atRecordedOom; ///< the simulated state at the recorded OOM
    std::optional<Oom> firstSimulatedOom;
    std::vector<int64_t> simulatedReserved; ///< after each event (AllocatorReplayOptions::keepCurve)

    /// Whether the recording holds something to check the simulation against: it followed the
    /// recorded setting on a file with segments, and saw segment events or memory from before
    /// the window. Otherwise its reserved curve is the simulation's alone.
    bool checkedAgainstRecording() const
    {
        return followedRecording && (segmentEventsRecorded > 0 || initialStateReconstructed);
    }
    double segmentMatchShare() const
    {
        return segmentEventsRecorded == 0 ? (segmentEventsSimulated == 0 ? 1.0 : 0.0)
                                          : double(segmentEventsMatched) / double(segmentEventsRecorded);
    }
    double reservedDifferenceShare() const
    {
        return recordedReservedPeak == 0 ? 0.0 : double(maxReservedDifference) / double(recordedReservedPeak);
    }
};

AllocatorReplayResult replayAllocator(const Snapshot& snapshot, const DeviceData& device,
                                      const MemoryTimeline& timeline, const AllocatorReplayOptions& options = {});

} // namespace headroom
