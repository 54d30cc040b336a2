// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli state FILE --event N`: the allocator's segments and blocks after one
// event (issue 4 §3), and `--query-bench K`, the timing of K random queries at any event
// (live set, breakdown, allocator state) that tools/bench.py reports.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace headroom::cli {

class StateCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    int bench();

    CLI::App* m_cmd = nullptr;
    std::string m_file;
    std::optional<int64_t> m_event;
    int m_device = -1;
    bool m_json = false;
    int m_blocks = 20;
    int m_benchQueries = 0;
};

} // namespace headroom::cli
