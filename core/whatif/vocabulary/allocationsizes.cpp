// SPDX-License-Identifier: MIT
#include "core/whatif/vocabulary/allocationsizes.h"

#include <algorithm>

namespace headroom {

void AllocationSizes::push_back(int64_t bytes)
{
    if (bytes >= 0 && bytes % kUnit == 0 && bytes / kUnit < int64_t(kOther)) {
        m_units.push_back(uint32_t(bytes / kUnit));
        return;
    }
    m_otherIndex.push_back(uint32_t(m_units.size()));
    m_otherBytes.push_back(bytes);
    m_units.push_back(kOther);
}

int64_t AllocationSizes::other(size_t i) const
{
    const auto it = std::lower_bound(m_otherIndex.begin(), m_otherIndex.end(), uint32_t(i));
    return m_otherBytes[size_t(it - m_otherIndex.begin())];
}

} // namespace headroom
