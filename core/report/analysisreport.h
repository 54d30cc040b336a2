// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/livegroups.h"
#include "core/replay/loadedtrace.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace headroom {

/// The `headroom-cli analyze` report for every device: phases and iterations, the peak
/// with its breakdown by category and phase, the largest allocations at the peak (one by
/// one and grouped by the code that allocated them),
/// fragmentation and the diagnosis.
/// `top`: rows of the allocations alive at the peak grouped by the code that made them.
nlohmann::json analysisJson(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top = 10);
/// `byModule`: also what is alive at the peak by module (recorded names, else module frames).
std::string analysisText(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top = 10,
                         bool byModule = false);
/// Every device's postmortem section (core/report/postmortemmarkdown), for pasting.
std::string analysisMarkdown(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top = 10);

/// `groups`' allocations by stack and by module, as `analyze` and MCP's `peak` write them.
nlohmann::json liveGroupsJson(const LiveGroups& groups);
/// The rows of liveGroupsJson's `by_stack` as text: "    96 x 100.00 MiB = 9.38 GiB  gradients,
/// born in backward", then "by" the user's code and the other frames under it.
std::string liveGroupRowsText(const nlohmann::json& groups);

} // namespace headroom
