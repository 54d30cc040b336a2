// SPDX-License-Identifier: MIT
#pragma once
// The CUDA caching allocator's sizes (PyTorch's c10/cuda/CUDACachingAllocator.cpp, the
// constants at the top of the file, unchanged from 1.x to 2.x): one definition for the
// allocator model, its replay and every what-if law that rounds a size as it does.

#include <cstdint>

namespace headroom::allocator {

inline constexpr int64_t kMinBlock = 512;          ///< kMinBlockSize: every request is rounded to it
inline constexpr int64_t kSmallSize = 1 << 20;     ///< kSmallSize: at most this goes to the small pool
inline constexpr int64_t kSmallBuffer = 2 << 20;   ///< kSmallBuffer: a small-pool segment
inline constexpr int64_t kLargeBuffer = 20 << 20;  ///< kLargeBuffer: a segment for requests up to kMinLargeAlloc
inline constexpr int64_t kMinLargeAlloc = 10 << 20; ///< kMinLargeAlloc
inline constexpr int64_t kRoundLarge = 2 << 20;    ///< kRoundLarge: larger segments round up to it

} // namespace headroom::allocator
