// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace headroom {

/// Exact tensor categories as PyTorch's memory profiler exports them (docs/formats.md, "Profiler memory timelines").
/// The numeric values are the export index `_CATEGORY_TO_INDEX` of `export_memory_timeline`
/// (0 PARAMETER ... 7 unknown), so raw timeline rows map without a table.
enum class TensorCategory : uint8_t {
    Parameter = 0,
    OptimizerState = 1,
    Input = 2,
    Temporary = 3,
    Activation = 4,
    Gradient = 5,
    AutogradDetail = 6,
    Unknown = 7,
    /// Headroom's own, after PyTorch's: an inference engine's KV cache (vLLM, SGLang), told by
    /// the code that allocates it (core/analysis/frameworksites.h). Never in a profiler export.
    KvCache = 8,
};

inline constexpr int kTensorCategoryCount = 9;
/// The categories of PyTorch's profiler exports (a raw memory timeline's rows): 0 .. 7.
inline constexpr int kProfilerCategoryCount = 8;

/// "PARAMETER", "OPTIMIZER_STATE", ... as PyTorch names them ("KV_CACHE": Headroom's).
const char* categoryName(TensorCategory c);
/// "parameter", "optimizer_state", ... as `_profile_to_snapshot` writes them.
const char* categoryLowerName(TensorCategory c);
/// Accepts either spelling (and "none"/"unknown"); nullopt for anything else.
std::optional<TensorCategory> categoryFromName(std::string_view name);

} // namespace headroom
