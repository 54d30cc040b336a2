// SPDX-License-Identifier: MIT
#include "app/climcp.h"

#include "app/clichecks.h"
#include "app/mcpserver.h"
#include "app/tracecache.h"

#include <iostream>

namespace headroom::cli {

void McpCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("mcp", "Serve the Model Context Protocol on stdin/stdout for coding agents "
                                      "(docs/agents.md)");
    m_cmd->add_option("--root", m_roots,
                      "Only read files under this directory (repeatable; default: any path a tool names)");
    m_cmd
        ->add_option(
            "--max-events", m_maxEvents,
            "Trace entries kept loaded between calls, in all (default 20,000,000; least recently used go first)")
        ->check(positiveWhole());
}

int McpCommand::run()
{
    std::vector<std::filesystem::path> roots(m_roots.begin(), m_roots.end());
    TraceCache cache(m_maxEvents, std::move(roots));
    McpServer server(cache);
    std::ios::sync_with_stdio(false);
    std::cerr << "headroom-cli mcp: serving on stdin/stdout (one JSON-RPC message per line)\n";
    return server.run(std::cin, std::cout);
}

} // namespace headroom::cli
