// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli replay FILE [--alloc-conf CONF] [--capacity SIZE] [--device N] [--json]`:
// replays the allocation requests through the caching-allocator simulation.
// Without --alloc-conf it checks the simulation against the recorded segment events; with
// it, it says whether that setting would have avoided the OOM. Exit 0, 2 on bad input.

#include <CLI/CLI.hpp>

#include <string>

namespace headroom::cli {

class ReplayCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    std::string m_file;
    std::string m_allocConf;
    std::string m_capacity;
    int m_device = -1;
    bool m_json = false;
};

} // namespace headroom::cli
