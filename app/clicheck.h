// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli check FILE`: a memory gate for CI. Checks the peak allocated
// against `--max-peak SIZE`, against a device (`--fit SIZE [--margin PCT]`) and against an
// earlier run (`--baseline OLD --max-growth PCT`, compared overall and by tensor category
// and phase at the peak, so the failure says what grew). One line per check, PASS or FAIL.
// Exit 0: every check passed; 1: one failed; 2: a file cannot be read or an argument is bad.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace headroom::cli {

class CheckCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    std::string m_file;
    std::string m_maxPeak;
    std::string m_fit;
    std::string m_margin;
    std::string m_baseline;
    std::string m_maxGrowth;
    std::optional<int> m_device;
    bool m_json = false;
};

} // namespace headroom::cli
