// SPDX-License-Identifier: MIT
#pragma once

// Memory in CUDA-graph and MemPool private pools, apart from the default pool (the official
// viewer's "Allocated Memory (incl. Private Pools)" draws each pool apart): which pool each
// allocation lives in and each pool's live bytes after every event.

#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

struct PrivatePoolCurves {
    using PoolId = std::pair<int64_t, int64_t>;
    std::vector<PoolId> ids;                    ///< the private pools, by id
    std::vector<std::vector<int64_t>> liveBytes; ///< per pool, after each event
    std::vector<int64_t> peakBytes;             ///< per pool
    bool empty() const { return ids.empty(); }
};

/// The pool of each allocation: the alloc entry's `pool_id` where the file has it, else the
/// final segment that holds its address (`segment_pool_id`); -1 for the default pool, else an
/// index into `ids` (filled here, sorted).
std::vector<int> allocationPools(const DeviceData& device, const MemoryTimeline& timeline,
                                 std::vector<PrivatePoolCurves::PoolId>& ids);

/// Each private pool's live bytes after every event; empty when the file names none.
PrivatePoolCurves privatePoolCurves(const DeviceData& device, const MemoryTimeline& timeline);

/// One private pool as `summary` and `analyze` report it: its segments and bytes in the
/// snapshot's recorded state (the end of the file) and its live peak over the trace.
struct PrivatePoolSummary {
    PrivatePoolCurves::PoolId id;
    size_t segments = 0;
    int64_t reserved = 0;  ///< in its segments at the end
    int64_t allocated = 0; ///< block bytes allocated or pending free at the end
    int64_t peakLive = 0;  ///< its allocations' highest live bytes over the trace
};
/// Every private pool of `device`, in the order of their ids; empty when it has none.
std::vector<PrivatePoolSummary> privatePoolSummaries(const DeviceData& device, const MemoryTimeline& timeline);

} // namespace headroom
