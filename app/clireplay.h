// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli replay FILE [--alloc-conf CONF] [--capacity SIZE] [--device N] [--json]`:
// replays the allocation requests through the caching-allocator simulation.
// Without --alloc-conf it checks the simulation against the recorded segment events; with
// it, it says whether that setting would have avoided the OOM. Exit 0, 2 on bad input.

#include "app/clicommand.h"

#include <CLI/CLI.hpp>

#include <optional>

#include <string>

namespace headroom::cli {

struct ReplayRequest {
    std::string file;
    std::optional<std::string> allocConf; ///< absent: the recorded setting
    std::string capacity;                 ///< empty: from the OOM record
    int device = -1;                      ///< ordinal; -1: every device
};

/// The allocator replay of `r.file` (the JSON of --json and of MCP's `replay`).
CommandOutput runReplay(const ReplayRequest& r, const TraceSource& source);

class ReplayCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    ReplayRequest m_req;
    std::string m_allocConf;
    bool m_json = false;
};

} // namespace headroom::cli
