// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/loadedtrace.h"
#include "core/whatif/ladder/whatifladder.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Whether an allocator setting alone would have avoided the recorded OOM: the caching
/// allocator replayed under the recorded setting (it must reproduce the recording) and under
/// each candidate setting, cheapest first.
struct AllocatorVerdict {
    double recordedMatch = 0;     ///< share of recorded segment events the replay reproduced
    bool trusted = false;         ///< the replay reproduces the recording (>= 99%, reserved within 1%)
    std::vector<std::string> tried; ///< the candidate settings replayed, in order
    std::string avoidedBy;        ///< the first setting under which the OOM is avoided; empty: none
    int64_t reservedPeak = 0;     ///< under that setting
    int64_t recordedReservedPeak = 0;
    int64_t capacity = 0;

    /// Replays the device's requests when it has an OOM record; nullopt otherwise. `capacity`:
    /// the bytes the allocator may reserve; 0: the OOM record's reserved + device free.
    static std::optional<AllocatorVerdict> forOom(const LoadedTrace& trace, size_t deviceIndex, int64_t capacity = 0);
    /// "replayed through the caching allocator under X, the OOM is avoided (reserved peak A of B)"
    /// or why it is not; empty when untrusted and nothing was tried.
    std::string evidence() const;
    /// What the ladder needs of it; nullopt when the replay is not trusted.
    std::optional<AllocatorRungInput> ladderInput() const;
};

} // namespace headroom
