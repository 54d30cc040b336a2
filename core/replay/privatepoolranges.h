// SPDX-License-Identifier: MIT
#pragma once

// The final segments of private pools (CUDA graphs, MemPool) by address: which pool an address
// lay in when the file has no `pool_id` on its entries. The replay and the pool curves ask it.

#include "core/model/snapshotmodel.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace headroom {

class PrivatePoolRanges {
public:
    using PoolId = std::pair<int64_t, int64_t>;

    explicit PrivatePoolRanges(const DeviceData& device)
    {
        for (const Segment& s : device.segments)
            if (s.poolId != PoolId{0, 0})
                m_ranges.push_back({s.address, s.address + uint64_t(std::max<int64_t>(0, s.totalSize)), s.poolId});
        std::sort(m_ranges.begin(), m_ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    }

    bool empty() const { return m_ranges.empty(); }
    /// (0, 0), the default pool, for an address in no private pool's final segment.
    PoolId poolAt(uint64_t addr) const
    {
        auto it = std::upper_bound(m_ranges.begin(), m_ranges.end(), addr,
                                   [](uint64_t a, const Range& r) { return a < r.begin; });
        if (it == m_ranges.begin())
            return {0, 0};
        --it;
        return addr < it->end ? it->pool : PoolId{0, 0};
    }

private:
    struct Range {
        uint64_t begin, end;
        PoolId pool;
    };
    std::vector<Range> m_ranges; ///< by address
};

} // namespace headroom
