// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/loadedtrace.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace headroom {

/// The `headroom-cli analyze` report for every device: phases and iterations, the peak
/// with its breakdown by category and phase, the largest allocations at the peak,
/// fragmentation and the diagnosis.
nlohmann::json analysisJson(const LoadedTrace& trace, std::optional<int64_t> capacity);
std::string analysisText(const LoadedTrace& trace, std::optional<int64_t> capacity);

} // namespace headroom
