// SPDX-License-Identifier: MIT
#include "core/whatif/whatifblocks.h"

#include <algorithm>

namespace headroom {

RepeatedBlocks findRepeatedBlocks(const std::vector<uint64_t>& keys, const std::vector<int64_t>& bytes,
                                  int minPeriod, size_t maxTensors)
{
    RepeatedBlocks best;
    const size_t n = keys.size();
    if (n != bytes.size() || n < 2 * size_t(std::max(1, minPeriod)) || n > maxTensors)
        return best;
    std::vector<double> prefix(n + 1, 0.0);
    for (size_t i = 0; i < n; ++i)
        prefix[i + 1] = prefix[i] + double(bytes[i]);
    for (size_t p = size_t(std::max(1, minPeriod)); 2 * p <= n; ++p) {
        size_t run = 0; // positions j with keys[j] == keys[j + p], ending at the current j
        for (size_t j = 0; j + p <= n; ++j) {
            const bool match = j + p < n && keys[j] == keys[j + p];
            if (match) {
                ++run;
                continue;
            }
            if (run >= p) {
                const size_t start = j - run, count = run / p + 1;
                const double covered = prefix[start + count * p] - prefix[start];
                if (covered > best.bytes * 1.0001) {
                    best.count = int(count);
                    best.period = int(p);
                    best.bytes = covered;
                }
            }
            run = 0;
        }
    }
    return best;
}

} // namespace headroom
