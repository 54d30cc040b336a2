// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli check FILE`: a memory gate for CI. Checks the peak allocated
// against `--max-peak SIZE`, against a device (`--fit SIZE [--margin PCT]`) and against an
// earlier run (`--baseline OLD --max-growth PCT`, compared overall and by tensor category
// and phase at the peak, so the failure says what grew) and against the standing budget
// (`--budget DB`: the configuration validated, the peak within its validated peak). One line per check, PASS or FAIL
// (continued on indented lines past 100 columns).
// Exit 0: every check passed; 1: one failed; 2: a file cannot be read or an argument is bad.

#include "app/clicommand.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

struct CheckRequest {
    std::string file;
    std::string maxPeak;
    std::string fit;
    std::string margin;
    std::string baseline;
    std::string maxGrowth;
    std::optional<int> device;
    std::string categories;               ///< the user's category rules file (with maxCategory)
    std::vector<std::string> maxCategory; ///< "NAME=SIZE": fail when that rule claims more at the peak
    std::string budget;                   ///< a budget store: fail unless the configuration is validated there
    std::vector<std::string> config;      ///< KEY=VALUE over the file's configuration (with budget)
};

/// The checks of `r` on its file (the JSON of --json and of MCP's `check`); exit code 1 when
/// one failed.
CommandOutput runCheck(const CheckRequest& r, const TraceSource& source);

class CheckCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    CheckRequest m_req;
    bool m_json = false;
};

} // namespace headroom::cli
