// SPDX-License-Identifier: MIT
#pragma once

// What the file records beside the allocation made at one event: the recorder's record
// (TraceEvents::tensors) and PyTorch's sparse extras (user_metadata, compile_context,
// forward_frames, pool_id), all sorted by event: one lookup for the laws, the groupings, the
// replay and the views.

#include "core/model/snapshotmodel.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// The entry of a sparse per-event list (sorted by event) for `event`; null when it has none
/// (or is before the trace). One lookup for every sparse extra below.
template <typename T>
const T* sparseAt(const std::vector<std::pair<uint32_t, T>>& entries, int64_t event)
{
    if (event < 0 || entries.empty())
        return nullptr;
    const auto it = std::lower_bound(entries.begin(), entries.end(), uint32_t(event),
                                     [](const auto& p, uint32_t e) { return p.first < e; });
    return it != entries.end() && it->first == uint32_t(event) ? &it->second : nullptr;
}

/// Null when the event has none (or is before the trace).
inline const RecordedTensor* recordedTensorAt(const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                              int64_t event)
{
    return sparseAt(tensors, event);
}

/// The string a sparse per-entry list (TraceEvents::userMetadata, compileContext) holds for
/// `event`; empty when it has none.
inline std::string_view entryStringAt(const std::vector<std::pair<uint32_t, uint32_t>>& entries,
                                      const StringPool& strings, int64_t event)
{
    const uint32_t* id = sparseAt(entries, event);
    return id ? strings.get(*id) : std::string_view();
}

/// The private pool (`pool_id`) of the entry at `event`; nullopt for the default pool.
inline std::optional<std::pair<int64_t, int64_t>>
entryPoolAt(const std::vector<std::pair<uint32_t, std::pair<int64_t, int64_t>>>& pools, int64_t event)
{
    const auto* id = sparseAt(pools, event);
    return id ? std::optional(*id) : std::nullopt;
}

/// The recorder's names (docs/formats.md): "optimizer_state", "forward".
inline std::string_view recordedKindName(RecordedTensor::Kind k)
{
    using K = RecordedTensor::Kind;
    switch (k) {
    case K::Parameter: return "parameter";
    case K::Buffer: return "buffer";
    case K::Gradient: return "gradient";
    case K::OptimizerState: return "optimizer_state";
    case K::Activation: return "activation";
    case K::Temporary: return "temporary";
    case K::Input: return "input";
    case K::Unknown: break;
    }
    return "unknown";
}

inline std::string_view recordedPhaseName(RecordedTensor::Phase p)
{
    using P = RecordedTensor::Phase;
    return p == P::Forward ? "forward" : p == P::Backward ? "backward" : p == P::Optimizer ? "optimizer" : "unknown";
}

} // namespace headroom
