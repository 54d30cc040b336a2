// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli doctor FILE [--json]`: is this capture good enough? Prints
// core/analysis/capturedoctor's findings, each with the recording option that avoids it. Exit 0
// whatever it finds (it reports, it does not gate), 2 when the file cannot be read.

#include "app/clicommand.h"

#include <CLI/CLI.hpp>

#include <string>

namespace headroom::cli {

/// The capture doctor's findings for `trace` (the JSON of --json and of MCP's `doctor`).
CommandOutput doctorOutput(const LoadedTrace& trace);

class DoctorCommand {
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
