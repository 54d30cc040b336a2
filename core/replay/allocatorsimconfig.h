// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// The caching-allocator options of `PYTORCH_CUDA_ALLOC_CONF` that change where memory goes
/// (c10/cuda/CUDAAllocatorConfig): the settings an allocator replay runs under.
struct AllocatorConfig {
    static constexpr int64_t kUnlimited = INT64_MAX;
    static constexpr int kRoundupIntervals = 16; ///< 1 MiB, 2 MiB, ... 32 GiB and up

    int64_t maxSplitSize = kUnlimited;  ///< blocks this large are never split (max_split_size_mb)
    double garbageCollectionThreshold = 0; ///< 0 = off
    bool expandableSegments = false;
    /// Divisions per power-of-two interval of the request size; index 0 is below 2 MiB.
    std::array<int, kRoundupIntervals> roundupDivisions{};

    /// Parses "key:value,key:value" as PyTorch does; nullopt and `error` on a bad option.
    /// Options that do not move memory (backend, pinned_*, release_lock_on_cudamalloc) are accepted.
    static std::optional<AllocatorConfig> parse(std::string_view conf, std::string* error = nullptr);
    /// The setting a snapshot recorded (`allocator_settings`, docs/formats.md, "Allocator settings"); defaults
    /// where the file has none. `found` says whether it had any.
    static AllocatorConfig fromSnapshot(const std::vector<std::pair<std::string, std::string>>& settings,
                                        bool* found = nullptr);

    int divisionsFor(int64_t size) const;
    /// The option string that selects this setting ("" for the defaults).
    std::string text() const;
    bool operator==(const AllocatorConfig&) const = default;
};

} // namespace headroom
