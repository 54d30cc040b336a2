// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

namespace headroom {

/// The blocks an Adafactor-kind optimizer keeps for one parameter set, predicted from the
/// shapes of its gradients (Shazeer and Stern, 2018; the layouts of `torch.optim.Adafactor` and
/// of transformers' `Adafactor` agree on it): a matrix (two dimensions or more) keeps the mean of
/// its squared gradient over its last dimension and over its second last (`shape[:-1]` and
/// `shape[:-2] + shape[-1:]` elements), a vector keeps the whole second moment. Leading
/// dimensions of one are dropped first: autograd makes a bias's gradient as [1, 1, n] and views
/// it as the bias's [n] (tools/category_truth.py's LSTM), and a row factor of one element is what
/// a real [1, n] parameter would add, one smallest block.
/// Returns block size (requests rounded up to the allocator's 512 bytes) -> how many.
struct ShapedGradient {
    std::vector<int64_t> shape;
    int64_t elementBytes = 4; ///< of the state kept for it
};
std::map<int64_t, int64_t> predictFactoredState(const std::vector<ShapedGradient>& gradients);

/// Bytes per element of a recorded dtype ("float32", "torch.bfloat16"); 0 for one it does not know.
int64_t dtypeElementBytes(std::string_view dtype);

} // namespace headroom
