// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli budget record|status` (docs/budget.md): the standing budget's store, written
// and read. Core (core/budget) assembles the runs and the policy's verdicts; this file words
// them. `check --budget` uses budgetCheck.

#include "app/clicommand.h"
#include "core/budget/budgetpolicy.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

struct BudgetRecordRequest {
    std::vector<std::string> files;
    std::string db;
    std::vector<std::string> config; ///< KEY=VALUE, winning over what the files tell
    std::string capacity;
    /// A run metric (the recorder's row, as JSON; "-": standard input) instead of files.
    std::string metricJson;
};

struct BudgetStatusRequest {
    std::string db;
    std::vector<std::string> config; ///< KEY=VALUE: only the configurations that agree
    std::string margin;
    std::string keyFields; ///< comma-separated; empty: the policy's default
};

CommandOutput runBudgetRecord(const BudgetRecordRequest& r, const TraceSource& source);
CommandOutput runBudgetStatus(const BudgetStatusRequest& r);

/// The policy `margin` and `keyFields` describe (empty: the defaults); a CommandError for a
/// bad value.
BudgetPolicy budgetPolicyOf(const std::string& margin, const std::string& keyFields);

/// `check --budget`: the run of `trace`'s device `di` (configuration from the file and
/// `config`) against its configuration in the store `db`: passed when the configuration is
/// validated and the peak is at most the validated peak times 1 + maxGrowth.
struct BudgetCheck {
    nlohmann::json json;
    bool passed = false;
    std::string line;
};
BudgetCheck budgetCheck(const LoadedTrace& trace, size_t di, const std::string& db,
                        const std::vector<std::string>& config, const BudgetPolicy& policy, double maxGrowth);

class BudgetCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    CLI::App* m_record = nullptr;
    CLI::App* m_status = nullptr;
    BudgetRecordRequest m_recordReq;
    BudgetStatusRequest m_statusReq;
    bool m_json = false;
};

} // namespace headroom::cli
