// SPDX-License-Identifier: MIT
#pragma once

// Which allocations change size with the precision (docs/whatif-model.md, "Precision"): a
// floating-point tensor takes the target's element width, an integer or bool one (token ids,
// indices, masks) keeps its bytes. The recorded dtype decides where a recorder wrote one;
// elsewhere a tensor counts as floating point (assumed), and a model input, which may be
// token ids or features, keeps both readings.

#include "core/analysis/categoryclassifier.h"
#include "core/model/snapshotmodel.h"
#include "core/model/stringpool.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <string_view>

namespace headroom {

/// How an allocation follows the element width; the band takes both readings of the last two.
enum class WidthClass : uint8_t {
    Float,      ///< floating point: read from its dtype, or assumed
    Fixed,      ///< an integer or bool dtype, recorded
    MaybeFixed, ///< a model input, floating point by its size: either reading
    MaybeFloat, ///< a model input of 8 bytes per token: token ids by its size, either reading
};
inline constexpr size_t kWidthClassCount = 4;

/// What the evidence said, over a whole trace.
struct WidthReadings {
    int64_t floatRead = 0, floatAssumed = 0, fixedRead = 0, either = 0; ///< allocations
    int64_t eitherBytes = 0; ///< measured bytes of the allocations read both ways
};

/// "float32", "torch.bfloat16", ... (a dtype as the recorders write it).
bool floatingDtype(std::string_view dtype);

/// The width class of one allocation. `rec`: its recorded tensor, if any; `tokens`: b0*s0
/// (0 when unknown).
WidthClass widthOf(const Allocation& a, const AllocationClass& c, const RecordedTensor* rec, const StringPool& strings,
                   int64_t tokens);

/// The factor each class takes at a float width `w`: its central reading, lowest and highest.
struct WidthFactors {
    double central = 1, low = 1, high = 1;
};
WidthFactors widthFactors(WidthClass c, double w);

} // namespace headroom
