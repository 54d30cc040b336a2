// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/livegroups.h"
#include "core/analysis/moduleforward.h"
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
/// `categories`: the user's categories file; groups_at_peak then holds `by_user_category`.
nlohmann::json analysisJson(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top = 10,
                            const UserCategories* categories = nullptr);
/// Where a peak at `event` is, in words: "at event N"; at -1 "before the first event" where the
/// device has an allocation history, else "in the final state" (all a file without one holds).
std::string peakWhere(int64_t event, bool history);

/// `byModule`: also what is alive at the peak by module (recorded names, else module frames);
/// `categories`: also what is alive at the peak by the user's categories.
std::string analysisText(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top = 10,
                         bool byModule = false, const UserCategories* categories = nullptr);
/// Every device's postmortem section (core/report/postmortemmarkdown), for pasting.
std::string analysisMarkdown(const LoadedTrace& trace, std::optional<int64_t> capacity, size_t top = 10);

/// `groups`' allocations by stack and by module, as `analyze` and MCP's `peak` write them
/// (and by the user's categories, when `groups` has them), with each `by_module` row's
/// MemTracker forward moments from `windows` (core/analysis/moduleforward.h).
nlohmann::json liveGroupsJson(const LiveGroups& groups, const ModuleForwardWindows& windows);
/// `{"rules": [{name, color, count, bytes, by_category}], "unclaimed_bytes", "unclaimed_count"}`.
nlohmann::json userCategoriesJson(const LiveGroups& groups);
/// The rows of liveGroupsJson's `by_stack` as text: "    96 x 100.00 MiB = 9.38 GiB  gradients,
/// born in backward", then "by" the user's code and the other frames under it.
std::string liveGroupRowsText(const nlohmann::json& groups);

} // namespace headroom
