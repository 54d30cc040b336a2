// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocatorconstants.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// The replay's measured byte size of every allocation, 4 bytes each where it is a multiple
/// of 512 below 2 TiB (the caching allocator's blocks: nearly every size a CUDA snapshot
/// records), any other in a side table: the replay reads one per boundary and a 10M-event
/// trace has 5M allocations (docs/performance.md).
class AllocationSizes {
public:
    void reserve(size_t n) { m_units.reserve(n); }
    void push_back(int64_t bytes);
    int64_t operator[](size_t i) const
    {
        const uint32_t u = m_units[i];
        return u != kOther ? int64_t(u) * kUnit : other(i);
    }
    size_t size() const { return m_units.size(); }

private:
    static constexpr int64_t kUnit = allocator::kMinBlock; ///< sizes are kept in the allocator's blocks
    static constexpr uint32_t kOther = UINT32_MAX;
    int64_t other(size_t i) const;

    std::vector<uint32_t> m_units;
    std::vector<uint32_t> m_otherIndex; ///< ascending: pushed in order
    std::vector<int64_t> m_otherBytes;
};

} // namespace headroom
