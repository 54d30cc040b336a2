// SPDX-License-Identifier: MIT
#pragma once

// A loaded file as the budget's runs, one per device (docs/budget.md, "Recording runs"): the
// configuration the file tells (the recorders' headroom_config, what the what-if reads from
// annotations and stacks, the allocator settings, the device and world size), the caller's
// pairs over it, the peaks, the worst step, the OOM, the categories at the peak and the what-if's
// projection of the run at its capacity (check --fit's, so both judge the margin alike).

#include "core/budget/budgetrun.h"
#include "core/replay/loadedtrace.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct BudgetRecordOptions {
    std::string file;     ///< the path as given
    std::string fileHash; ///< its SHA-256 (core/util/sha256.h)
    BudgetConfig overrides; ///< `--config KEY=VALUE`: win over what the file tells
    std::optional<int64_t> capacity; ///< the user's; else the OOM record's, else unknown
};

/// One run per device of `trace` (a device with no events is skipped).
std::vector<BudgetRun> budgetRunsOf(const std::shared_ptr<const LoadedTrace>& trace, const BudgetRecordOptions& options);

/// The configuration `trace` tells for the device at `deviceIndex`, before any override.
BudgetConfig budgetConfigOf(const LoadedTrace& trace, size_t deviceIndex);

/// "KEY=VALUE" pairs (from `--config`) as a configuration; throws std::invalid_argument naming
/// the pair that has no '=' or an empty key.
BudgetConfig parseBudgetPairs(const std::vector<std::string>& pairs);

} // namespace headroom
