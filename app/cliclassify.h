// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli classify FILE --json`: every allocation of every device with the category and
// the phase of birth Headroom gives it, from the same analysis the other subcommands use. It
// is how a recording's ground truth (tools/category_truth.py) scores the classifiers; the
// text output sums bytes by category and phase at the peak.

#include <CLI/CLI.hpp>

#include <string>

namespace headroom::cli {

class ClassifyCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    std::string m_file;
    bool m_json = false;
};

} // namespace headroom::cli
