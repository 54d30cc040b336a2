// SPDX-License-Identifier: MIT
#pragma once

// `headroom-cli mcp`: a Model Context Protocol server over stdio (docs/agents.md). One
// JSON-RPC 2.0 message per line in, one per line out (the MCP stdio transport); anything
// else goes to stderr. Tools are app/mcptools; opened files are also resources
// (file:///path, read as their summary JSON). Bad input never ends the session: a line
// that is not JSON, an unknown method, an unknown tool, a bad argument or an unreadable file
// each get a JSON-RPC error naming what was wrong; the server exits when stdin closes.

#include "app/tracecache.h"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>

namespace headroom::cli {

class McpServer {
public:
    /// The protocol revisions this server speaks, newest first; it answers initialize with
    /// the client's when it is one of them, else with the newest.
    static const std::vector<std::string>& protocolVersions();

    explicit McpServer(TraceCache& cache)
        : m_cache(cache)
    {}

    /// Reads messages from `in` until it closes; returns the exit code (0).
    int run(std::istream& in, std::ostream& out);
    /// The response to one line, or nothing (a notification, an empty line).
    std::optional<nlohmann::json> handle(const std::string& line);

private:
    std::optional<nlohmann::json> respond(const std::string& line);
    nlohmann::json dispatch(const std::string& method, const nlohmann::json& params);
    nlohmann::json initialize(const nlohmann::json& params) const;
    nlohmann::json listTools() const;
    nlohmann::json callTool(const nlohmann::json& params);
    nlohmann::json listResources() const;
    nlohmann::json readResource(const nlohmann::json& params);

    TraceCache& m_cache;
};

} // namespace headroom::cli
