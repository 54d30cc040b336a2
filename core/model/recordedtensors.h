// SPDX-License-Identifier: MIT
#pragma once

// The recorder's record of the allocation made at one event (TraceEvents::tensors, sorted
// by event): one lookup for the laws and the module grouping.

#include "core/model/snapshotmodel.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace headroom {

/// Null when the event has none (or is before the trace).
inline const RecordedTensor* recordedTensorAt(const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                              int64_t event)
{
    if (event < 0 || tensors.empty())
        return nullptr;
    const auto it = std::lower_bound(tensors.begin(), tensors.end(), uint32_t(event),
                                     [](const auto& p, uint32_t e) { return p.first < e; });
    return it != tensors.end() && it->first == uint32_t(event) ? &it->second : nullptr;
}

} // namespace headroom
