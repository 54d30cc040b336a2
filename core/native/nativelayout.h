// SPDX-License-Identifier: MIT
#pragma once

// Constants of the .hrt layout (docs/native-format.md) shared by the writer
// (nativeformat.cpp) and the reader (nativereader.cpp), so the two cannot disagree.

#include <cstddef>
#include <cstdint>

namespace headroom::nativelayout {

inline constexpr uint32_t kCompressed = 1u; ///< section flag: zstd payload
inline constexpr uint32_t kCritical = 2u;   ///< section flag: a reader must understand it
inline constexpr uint32_t kEncRaw = 0;      ///< column encoding: plain array
inline constexpr uint32_t kEncDelta = 1;    ///< column encoding: deltas
inline constexpr size_t kSegmentRecord = 4 + 8 * 6 + 2 + 16 + 12; ///< `segs` record bytes
inline constexpr size_t kBlockRecord = 8 * 3 + 1 + 4;             ///< `blks` record bytes

} // namespace headroom::nativelayout
