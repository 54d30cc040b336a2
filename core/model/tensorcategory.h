// SPDX-License-Identifier: MIT
#pragma once

#include <array>
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
    /// Headroom's own: an inference engine's model as its loader leaves it (vLLM, SGLang): the
    /// weights and the buffers the model builds. Not the trained model's parameters, so no
    /// lever that acts on parameters (sharding, precision, the optimizer) acts on them.
    EngineWeights = 9,
};

inline constexpr int kTensorCategoryCount = 10;
/// The categories of PyTorch's profiler exports (a raw memory timeline's rows): 0 .. 7.
inline constexpr int kProfilerCategoryCount = 8;

/// The order of the categories in every stack, table and legend, the window's and the
/// report's alike: what stays for the whole run first (the weights, an engine's cache, the
/// optimizer's state), what one step makes after it.
inline constexpr std::array<TensorCategory, kTensorCategoryCount> kCategoryDisplayOrder = {
    TensorCategory::Parameter,  TensorCategory::EngineWeights,  TensorCategory::KvCache,
    TensorCategory::OptimizerState, TensorCategory::Gradient,   TensorCategory::Input,
    TensorCategory::Activation, TensorCategory::AutogradDetail, TensorCategory::Temporary,
    TensorCategory::Unknown,
};

/// An inference engine's own memory (its KV cache, its model): sized by the engine's settings,
/// so no training lever (batch, sharding, precision, optimizer) moves it.
inline constexpr bool isEngineMemory(TensorCategory c)
{
    return c == TensorCategory::KvCache || c == TensorCategory::EngineWeights;
}

/// "PARAMETER", "OPTIMIZER_STATE", ... as PyTorch names them ("KV_CACHE": Headroom's).
const char* categoryName(TensorCategory c);
/// "parameter", "optimizer_state", ... as `_profile_to_snapshot` writes them.
const char* categoryLowerName(TensorCategory c);
/// Accepts either spelling (and "none"/"unknown"); nullopt for anything else.
std::optional<TensorCategory> categoryFromName(std::string_view name);

} // namespace headroom
