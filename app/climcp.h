// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli mcp [--root DIR]...`: the MCP server on stdin/stdout (app/mcpserver).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace headroom::cli {

class McpCommand {
public:
    void add(CLI::App& app);
    bool parsed() const { return m_cmd && m_cmd->parsed(); }
    int run();

private:
    CLI::App* m_cmd = nullptr;
    std::vector<std::string> m_roots;
    size_t m_maxEvents = 20'000'000;
};

} // namespace headroom::cli
