// SPDX-License-Identifier: MIT
#include "core/whatif/vocabulary/whatifblocks.h"

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
                    best.start = int(start);
                    best.bytes = covered;
                }
            }
            run = 0;
        }
    }
    return best;
}

namespace {

void collectRuns(const std::vector<uint64_t>& keys, const std::vector<int64_t>& bytes, size_t from, size_t to,
                 double minBytes, int minPeriod, size_t maxTensors, std::vector<RepeatedBlocks>& out)
{
    if (to - from < 2 * size_t(std::max(1, minPeriod)))
        return;
    const std::vector<uint64_t> k(keys.begin() + long(from), keys.begin() + long(to));
    const std::vector<int64_t> b(bytes.begin() + long(from), bytes.begin() + long(to));
    RepeatedBlocks rb = findRepeatedBlocks(k, b, minPeriod, maxTensors);
    if (rb.count < 2 || rb.bytes < minBytes)
        return;
    const size_t start = from + size_t(rb.start), end = start + size_t(rb.count * rb.period);
    rb.start = int(start);
    out.push_back(rb);
    collectRuns(keys, bytes, from, start, minBytes, minPeriod, maxTensors, out);
    collectRuns(keys, bytes, end, to, minBytes, minPeriod, maxTensors, out);
}

} // namespace

std::vector<RepeatedBlocks> findRepeatedRuns(const std::vector<uint64_t>& keys, const std::vector<int64_t>& bytes,
                                             double minShare, int minPeriod, size_t maxTensors)
{
    std::vector<RepeatedBlocks> out;
    if (keys.size() != bytes.size())
        return out;
    double total = 0;
    for (int64_t b : bytes)
        total += double(b);
    collectRuns(keys, bytes, 0, keys.size(), minShare * total, minPeriod, maxTensors, out);
    return out;
}

} // namespace headroom
