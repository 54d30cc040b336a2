// SPDX-License-Identifier: MIT
#include "core/model/tensorcategory.h"

#include <cctype>
#include <string>

namespace headroom {

namespace {

constexpr const char* kUpper[kTensorCategoryCount] = {"PARAMETER", "OPTIMIZER_STATE", "INPUT",
                                                      "TEMPORARY", "ACTIVATION",      "GRADIENT",
                                                      "AUTOGRAD_DETAIL", "UNKNOWN",   "KV_CACHE",
                                                      "ENGINE_WEIGHTS"};
constexpr const char* kLower[kTensorCategoryCount] = {"parameter", "optimizer_state", "input",
                                                      "temporary", "activation",      "gradient",
                                                      "autograd_detail", "unknown",   "kv_cache",
                                                      "engine_weights"};

} // namespace

const char* categoryName(TensorCategory c)
{
    const auto i = static_cast<int>(c);
    return i < kTensorCategoryCount ? kUpper[i] : "UNKNOWN";
}

const char* categoryLowerName(TensorCategory c)
{
    const auto i = static_cast<int>(c);
    return i < kTensorCategoryCount ? kLower[i] : "unknown";
}

std::optional<TensorCategory> categoryFromName(std::string_view name)
{
    std::string lower(name);
    for (char& ch : lower)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower.rfind("category.", 0) == 0)
        lower = lower.substr(9);
    if (lower == "none" || lower.empty())
        return TensorCategory::Unknown;
    for (int i = 0; i < kTensorCategoryCount; ++i)
        if (lower == kLower[i])
            return static_cast<TensorCategory>(i);
    return std::nullopt;
}

} // namespace headroom
