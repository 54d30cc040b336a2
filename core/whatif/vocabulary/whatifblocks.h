// SPDX-License-Identifier: MIT
#pragma once

// Repeated blocks in a forward pass: the layers that activation checkpointing wraps.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

struct RepeatedBlocks {
    int count = 0;        ///< blocks found (0: no repetition)
    int period = 0;       ///< saved tensors per block
    int start = 0;        ///< index of the first block's first key
    double bytes = 0;     ///< saved bytes inside the repeated blocks
};

/// The longest tandem repeat, by bytes, of `keys` (one per saved tensor, in allocation order:
/// the tensor's stack, or its size when there are no stacks). A model's layers run the same
/// code from the same call site, so their saved tensors repeat with one period, as many times
/// as there are layers; what lies outside (embeddings, head, loss) does not. `bytes` are the
/// sizes of the same tensors. Periods of at least `minPeriod` tensors; inputs longer than
/// `maxTensors` are not searched (quadratic).
RepeatedBlocks findRepeatedBlocks(const std::vector<uint64_t>& keys, const std::vector<int64_t>& bytes,
                                  int minPeriod = 2, size_t maxTensors = 6000);

/// Every disjoint tandem repeat of `keys`, largest first: the longest, then the longest in what
/// lies before and after it, and so on (an encoder's layers and a decoder's; a convnet's stages
/// of different widths). Repeats covering less than `minShare` of all bytes are left out.
std::vector<RepeatedBlocks> findRepeatedRuns(const std::vector<uint64_t>& keys, const std::vector<int64_t>& bytes,
                                             double minShare = 0.05, int minPeriod = 2, size_t maxTensors = 6000);

} // namespace headroom
