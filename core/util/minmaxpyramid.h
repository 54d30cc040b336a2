// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// Min/max of a series over blocks of 8, 64, 512, 4096 and 32768 values, built in one
/// pass, so downsampling any range to a few thousand points costs O(points) block reads
/// instead of a pass over every value: panning a million-event timeline stays within a
/// frame. Same contract as downsampleMinMax (every bucket's minimum and maximum, indices
/// ascending, the last index of the range included); bucket boundaries are aligned to the
/// largest block that fits a quarter of a bucket, which moves them by less than a quarter
/// of a bucket and still puts every value in exactly one bucket.
class MinMaxPyramid {
public:
    MinMaxPyramid() = default;
    /// For int64_t series (the measured curves) and float ones (the projected curve).
    template <class T>
    explicit MinMaxPyramid(const std::vector<T>& values);

    template <class T>
    std::vector<size_t> downsample(const std::vector<T>& values, size_t first, size_t last, size_t buckets) const;
    /// Indices of the minimum and maximum of values[lo, hi) (lo < hi).
    template <class T>
    void minMax(const std::vector<T>& values, size_t lo, size_t hi, size_t& iMin, size_t& iMax) const;
    size_t size() const { return m_size; }

private:
    struct Level {
        size_t block = 0;
        std::vector<uint32_t> minIndex, maxIndex; ///< per block
    };
    std::vector<Level> m_levels; ///< finest first
    size_t m_size = 0;
};

} // namespace headroom
