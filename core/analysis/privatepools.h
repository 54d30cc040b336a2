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

} // namespace headroom
