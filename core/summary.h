// SPDX-License-Identifier: MIT
#pragma once

#include "core/loader.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

/// The `headroom-cli summary` report: per device, the final allocator state and the
/// replayed peak. JSON keys are a stable contract (see README).
nlohmann::json summaryJson(const LoadedTrace& trace);
std::string summaryText(const LoadedTrace& trace);

} // namespace headroom
