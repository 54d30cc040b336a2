// SPDX-License-Identifier: MIT
#pragma once

#include "core/frametable.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// The allocator actions of a snapshot's device trace (FORMATS.md §1.6).
enum class TraceAction : uint8_t {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Annotate,
    Free, ///< already-merged free_requested + free_completed (some JSON renditions)
    Other,
};

const char* actionName(TraceAction a);
TraceAction actionFromName(std::string_view name);

/// One device's trace entries as flat arrays (structure of arrays): a million events
/// cost about 37 MB, no per-event allocation. Index i in every array is the i-th
/// entry of `device_traces[device]` as the file lists it.
struct TraceEvents {
    static constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

    std::vector<TraceAction> action;
    std::vector<uint64_t> addr;
    std::vector<int64_t> size;
    std::vector<int64_t> stream;
    std::vector<int64_t> timeUs; ///< kNoTime where the entry has none
    std::vector<uint32_t> stack; ///< FrameTable stack id; 0 = no frames
    /// Sparse extras, sorted by event index.
    std::vector<std::pair<uint32_t, int64_t>> deviceFree;     ///< oom entries
    std::vector<std::pair<uint32_t, uint32_t>> compileContext; ///< string id
    std::vector<std::pair<uint32_t, uint32_t>> userMetadata;   ///< string id
    bool anyTime = false;

    size_t count() const { return action.size(); }
    void reserve(size_t n);
    void clear();
};

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive, Unknown };

struct Block {
    uint64_t address = 0;
    int64_t size = 0;
    int64_t requestedSize = 0; ///< after the legacy mapping of FORMATS.md §1.5
    BlockState state = BlockState::Unknown;
    uint32_t stack = 0;
};

struct Segment {
    int device = 0;
    uint64_t address = 0;
    int64_t totalSize = 0;
    int64_t allocatedSize = 0;
    int64_t activeSize = 0;
    int64_t requestedSize = 0;
    int64_t stream = 0;
    bool largePool = true;
    bool expandable = false;
    std::pair<int64_t, int64_t> poolId{0, 0};
    uint32_t stack = 0;
    uint32_t firstBlock = 0; ///< index into DeviceData::blocks
    uint32_t blockCount = 0;
};

struct OomEvent {
    int64_t eventIndex = -1;
    int64_t size = 0;
    int64_t deviceFree = 0;
};

/// A `record_function` START/END marker from `external_annotations`.
struct Annotation {
    std::string name;
    bool start = true;
    int device = 0;
    int64_t timeUs = 0;
};

struct DeviceData {
    int device = 0;
    TraceEvents trace;
    std::vector<Segment> segments;
    std::vector<Block> blocks;
    std::map<std::string, uint64_t> actionCounts; ///< by the action string as written
    std::vector<OomEvent> ooms;
};

/// Everything read from one snapshot file; immutable once the importer returns it.
struct Snapshot {
    std::string path;
    std::string format;        ///< e.g. "pickle protocol 4 (Python)"
    std::string schemaEra;     ///< e.g. "2.1+ (frames on blocks)"
    FrameTable frames;
    std::vector<DeviceData> devices; ///< sorted by device ordinal
    std::vector<Annotation> annotations;
    std::vector<std::pair<std::string, std::string>> allocatorSettings; ///< key, value as text
    std::vector<std::string> notes; ///< things the user should know (ring buffer wrapped, ...)

    const DeviceData* findDevice(int device) const;
};

} // namespace headroom
