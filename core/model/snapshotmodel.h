// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/frametable.h"
#include "core/model/tensorcategory.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// The allocator actions of a snapshot's device trace (docs/formats.md, "Trace actions").
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

/// What a Headroom recorder knew of the tensor an allocation was made for: the snapshot's
/// `headroom_tensor` on an alloc entry (docs/formats.md, "What Headroom's recorders add").
/// Exact where present; absent from files the recorders did not write.
struct RecordedTensor {
    enum class Kind : uint8_t { Unknown, Parameter, Buffer, Gradient, OptimizerState, Activation, Temporary, Input };
    enum class Phase : uint8_t { Unknown, Forward, Backward, Optimizer };
    std::vector<int64_t> shape;
    uint32_t dtype = 0;        ///< string id ("float32")
    uint32_t module = 0;       ///< string id of the qualified module name ("" is the root module)
    bool hasModule = false;    ///< false: no module's forward was running
    Kind kind = Kind::Unknown;
    Phase phase = Phase::Unknown;
    /// Bit d: dimension d equals the stated micro-batch / sequence (both where they coincide).
    uint32_t batchDims = 0, seqDims = 0;
    /// `like`: how many entries back in the trace each alloc entry is whose tensor had this
    /// one's exact shape in a shape-preserving op (a pointwise op, a copy, a softmax): the
    /// two grow alike (docs/whatif-model.md, "Laws", evidence "like").
    std::vector<uint32_t> like;
    /// The op graph (CPU recorder): the ATen op that made the storage, how many entries back
    /// its tensor inputs' storages are, and how many back each storage autograd saved for its
    /// backward (0: this one; negative: a later output of the same op). docs/formats.md.
    uint32_t op = 0; ///< string id ("aten::addmm")
    bool hasOp = false;
    std::vector<uint32_t> inputs;
    std::vector<int32_t> saves;
    /// An input that reached the op through a cast that was a no-op in the recorded run
    /// (`x.to(torch.float32)` of an fp32 x), and what the cast asked for: a dtype, or the dtype
    /// of another entry. Also what a `dtype=` argument asked of this op's output (`dtypeArg`).
    struct Cast {
        uint32_t input = 0;  ///< entries back
        uint32_t dtype = 0;  ///< string id of the dtype asked for; 0: `like` says
        uint32_t like = 0;   ///< entries back to the tensor whose dtype it follows; 0: `dtype` says
        int64_t bytes = -1;  ///< the bytes of the tensor cast (a slice of its storage); -1: all of it
    };
    std::vector<Cast> casts;
    Cast dtypeArg;           ///< `input` unused; dtype 0 and like 0: none
};

/// One device's trace entries as flat arrays (structure of arrays): a million events
/// cost about 37 MB, no per-event allocation. Index i in every array is the i-th
/// entry of `device_traces[device]` as the file lists it.
struct TraceEvents {
    static constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

    std::vector<TraceAction> action;
    std::vector<uint64_t> addr;
    std::vector<int64_t> size;
    /// Each event's stream; empty when every event is on `uniformStream` (compactStreams():
    /// most traces have one stream, and a 10M-event trace then holds 80 MB less). Read it with
    /// streamAt().
    std::vector<int64_t> stream;
    std::vector<int64_t> timeUs; ///< kNoTime where the entry has none
    std::vector<uint32_t> stack; ///< FrameTable stack id; 0 = no frames
    /// Sparse extras, sorted by event index.
    std::vector<std::pair<uint32_t, int64_t>> deviceFree;     ///< oom entries
    std::vector<std::pair<uint32_t, uint32_t>> compileContext; ///< string id
    std::vector<std::pair<uint32_t, uint32_t>> userMetadata;   ///< string id
    /// `forward_frames`: the forward's stack of a tensor the backward made, as PyTorch
    /// formats it (its strings joined), string id.
    std::vector<std::pair<uint32_t, uint32_t>> forwardFrames;
    /// `pool_id` of the entries outside the default pool (0, 0): a CUDA graph's or a MemPool's.
    std::vector<std::pair<uint32_t, std::pair<int64_t, int64_t>>> poolIds;
    std::vector<std::pair<uint32_t, RecordedTensor>> tensors;  ///< alloc entries a recorder described
    bool anyTime = false;
    /// Exact TensorCategory per event (profiler timelines, `_profile_to_snapshot` dicts);
    /// empty when the source does not know categories.
    std::vector<uint8_t> category;
    /// The source's own allocator totals after each event (Chrome traces with `Total
    /// Allocated`/`Total Reserved`, profiler timelines). Empty when unknown; when present,
    /// replay takes the curve from them instead of summing alloc/free pairs.
    std::vector<int64_t> totalAllocated;
    std::vector<int64_t> totalReserved;

    /// What every event has: one entry of the six parallel arrays above.
    struct Entry {
        TraceAction action = TraceAction::Other;
        uint64_t addr = 0;
        int64_t size = 0;
        int64_t stream = 0;
        int64_t timeUs = kNoTime;
        uint32_t stack = 0;
    };

    int64_t uniformStream = 0;

    size_t count() const { return action.size(); }
    int64_t streamAt(size_t i) const { return stream.empty() ? uniformStream : stream[i]; }
    /// Drops the stream column when every event has the same stream (after a load).
    void compactStreams();
    /// The stream column, one per event, whether or not it was dropped.
    std::vector<int64_t> streams() const;
    /// Appends one event to the parallel arrays, so they cannot go out of step; the sparse
    /// extras, `category` and the totals stay the caller's (most sources have none). Inline:
    /// the pickle reader calls it once per trace entry.
    void append(const Entry& e)
    {
        if (stream.empty() && !action.empty()) [[unlikely]]
            stream.assign(action.size(), uniformStream); // appended to after compactStreams()
        action.push_back(e.action);
        addr.push_back(e.addr);
        size.push_back(e.size);
        stream.push_back(e.stream);
        timeUs.push_back(e.timeUs);
        stack.push_back(e.stack);
    }
    void reserve(size_t n);
    void clear();
};

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive, Unknown };

/// The block `state` strings; "active_awaiting_free" (the docstring's spelling) is accepted.
BlockState blockStateFromName(std::string_view name);

struct Block {
    uint64_t address = 0;
    int64_t size = 0;
    int64_t requestedSize = 0; ///< after the legacy mapping of docs/formats.md, "Requested size"
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
    std::string deviceType = "cuda"; ///< "cuda", "cpu", "hip", ... or "device type N"
    std::string sourceFormat;        ///< e.g. "chrome trace", "memory timeline (raw)"; "" = snapshot
    std::string sourceFile;          ///< the file this device came from
    int rank = -1;                   ///< distributed rank when known
    /// True when the allocated curve is relative to the start of the window (Chrome traces
    /// without `Total Allocated`): the UI and CLI must say so.
    bool relativeCurve = false;

    /// The stack of the request an OOM record reports (the failing allocation's frames);
    /// 0 when the entry carried none.
    uint32_t oomStack(const OomEvent& o) const;
};

/// The totals of a device's final allocator state: what its segments and blocks hold when
/// the snapshot was taken (the curve's end, and all there is without trace entries).
struct FinalTotals {
    int64_t reserved = 0;
    int64_t allocated = 0; ///< active allocated blocks
    int64_t active = 0;    ///< allocated plus freed blocks still pending on a stream
    int64_t requested = 0; ///< what the allocated blocks were asked for, before rounding
};
FinalTotals finalTotals(const DeviceData& dev);

/// A named time range from a Chrome trace (user annotations, profiler steps, optimizer
/// steps, backward functions), kept for the phase analysis.
enum class TimeWindowKind : uint8_t { UserAnnotation, ProfilerStep, OptimizerStep, ZeroGrad, Backward, Other };
const char* timeWindowKindName(TimeWindowKind k);

struct TimeWindow {
    std::string name;
    int64_t startUs = 0;
    int64_t endUs = 0;
    TimeWindowKind kind = TimeWindowKind::Other;
    int64_t tid = 0; ///< backward runs on the autograd thread, not the forward's
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
    /// The run's configuration as a recorder stored it (`headroom_config`: micro_batch, seq,
    /// precision, ...): key, value as text. Empty when the file has none.
    std::vector<std::pair<std::string, std::string>> runConfig;
    std::vector<std::string> notes; ///< things the user should know (ring buffer wrapped, ...)
    std::vector<TimeWindow> timeWindows; ///< Chrome traces only; sorted by start
    std::string userData; ///< JSON text of user annotations (notes, bookmarks, what-if); kept verbatim in .hrt

    const DeviceData* findDevice(int device) const;
};

} // namespace headroom
