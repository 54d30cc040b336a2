// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace headroom {

/// Training phases an event can belong to (docs/categories-and-phases.md).
enum class Phase : uint8_t { Setup, Forward, Loss, Backward, Optimizer, Other };

inline constexpr size_t kPhaseCount = 6;

/// "setup", "forward", ... (JSON keys and display names alike).
inline std::string_view phaseKey(Phase p)
{
    static constexpr std::array<std::string_view, kPhaseCount> kKeys = {"setup", "forward", "loss",
                                                                        "backward", "optimizer", "other"};
    return kKeys[static_cast<size_t>(p)];
}

inline std::optional<Phase> phaseFromKey(std::string_view key)
{
    for (size_t i = 0; i < kPhaseCount; ++i)
        if (phaseKey(static_cast<Phase>(i)) == key)
            return static_cast<Phase>(i);
    return std::nullopt;
}

} // namespace headroom
