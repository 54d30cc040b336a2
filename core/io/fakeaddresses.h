// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace headroom {

/// Synthetic addresses for formats whose memory events carry none (Chrome traces without
/// `Addr`, profiler memory timelines), so replay can pair frees with allocations as it does
/// for snapshots. A free takes the most recent live allocation with the same key (size,
/// and whatever else the format knows, e.g. the category); without one it gets a fresh
/// address (freed but never allocated inside the window). One instance per device.
class FakeAddresses {
public:
    /// Far from any real device pointer, so a synthetic address is recognisable.
    static constexpr uint64_t kBase = 0x100000000000ull;
    /// Apart by more than any alignment the views care about.
    static constexpr uint64_t kStride = 512;

    /// What an allocation is paired by: its size and a format-defined tag (0 when unused).
    using Key = std::pair<int64_t, uint8_t>;

    /// An address no allocation of this instance had before.
    uint64_t fresh();
    /// Records an allocation under `key` at `reuse` (a tensor that keeps its address), or at
    /// a fresh address when `reuse` is 0; returns the address.
    uint64_t alloc(Key key, uint64_t reuse = 0);
    /// The address of the most recent live allocation under `key`, now freed; a fresh
    /// address when there is none.
    uint64_t free(Key key);

private:
    std::map<Key, std::vector<uint64_t>> m_live;
    uint64_t m_next = kBase;
};

} // namespace headroom
