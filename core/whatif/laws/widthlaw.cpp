// SPDX-License-Identifier: MIT
#include "core/whatif/laws/widthlaw.h"
#include "core/replay/allocatorconstants.h"

#include <algorithm>

namespace headroom {

bool floatingDtype(std::string_view d)
{
    if (d.substr(0, 6) == "torch.")
        d.remove_prefix(6);
    // float16/32/64, bfloat16, the float8 kinds, half and double (and their complex forms).
    return d.find("float") != std::string_view::npos || d == "half" || d == "double" ||
           d.substr(0, 7) == "complex";
}

WidthClass widthOf(const Allocation& a, const AllocationClass& c, const RecordedTensor* rec, const StringPool& strings,
                   int64_t tokens)
{
    if (rec && rec->dtype != 0)
        return floatingDtype(strings.get(rec->dtype)) ? WidthClass::Float : WidthClass::Fixed;
    if (c.category != TensorCategory::Input)
        return WidthClass::Float;
    // int64 token ids are 8 bytes per token, as the allocator rounds them to 512 bytes.
    constexpr int64_t kBlock = allocator::kMinBlock;
    const int64_t ids = tokens > 0 ? (8 * tokens + kBlock - 1) / kBlock * kBlock : -1;
    return a.size == ids ? WidthClass::MaybeFloat : WidthClass::MaybeFixed;
}

WidthFactors widthFactors(WidthClass c, double w)
{
    switch (c) {
    case WidthClass::Float: return {w, w, w};
    case WidthClass::Fixed: return {1, 1, 1};
    case WidthClass::MaybeFixed: return {w, std::min(w, 1.0), std::max(w, 1.0)};
    case WidthClass::MaybeFloat: return {1, std::min(w, 1.0), std::max(w, 1.0)};
    }
    return {};
}

} // namespace headroom
