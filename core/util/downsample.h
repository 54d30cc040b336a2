// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// Reduces `values[first, last)` to at most about 2*buckets points for drawing,
/// keeping the minimum and the maximum of every bucket (in index order), so no peak
/// is ever lost to averaging. Returns event indices; the caller maps them to x. For int64_t
/// series (the measured curves) and float ones (the projected curve).
template <class T>
std::vector<size_t> downsampleMinMax(const std::vector<T>& values, size_t first, size_t last, size_t buckets);

} // namespace headroom
