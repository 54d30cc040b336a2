// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli compare A B`: what grew and what shrank from run A to run B, at the peaks by
// tensor category, phase, module and the code that allocated it, and iteration by iteration.
// Exit codes as `check`: 0, or 1 when --max-growth is given and B's peak grew more than it
// over A's; 2 when a file cannot be read or an argument is bad.

#include "app/clicommand.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace headroom::cli {

struct CompareRequest {
    std::string fileA, fileB;
    std::optional<int> device; ///< ordinal in both; default: each file's device with the highest peak
    std::string maxGrowth;     ///< empty: report only
    std::string categories;    ///< the user's category rules file; empty: none
};

CommandOutput runCompare(const CompareRequest& r, const TraceSource& source);

class CompareCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    CompareRequest m_req;
    bool m_json = false;
};

} // namespace headroom::cli
