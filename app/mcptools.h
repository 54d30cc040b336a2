// SPDX-License-Identifier: MIT
#pragma once

// The MCP server's tools: each a name, a description, a JSON Schema for its arguments and
// one for its result, and a function from the arguments to the CLI's CommandOutput (the
// JSON of the subcommand's --json, so an agent and a script read the same keys,
// docs/cli-json.md). Bad arguments throw CommandError, which the server answers as a
// JSON-RPC error naming the argument.

#include "app/clicommand.h"
#include "app/tracecache.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace headroom::cli {

struct McpTool {
    std::string name;
    std::string description;
    nlohmann::json inputSchema;
    nlohmann::json outputSchema;
    CommandOutput (*call)(const nlohmann::json& arguments, TraceCache& cache);
};

/// Every tool, in the order tools/list gives them.
const std::vector<McpTool>& mcpTools();

/// The tool named `name`, or null.
const McpTool* findMcpTool(const std::string& name);

} // namespace headroom::cli
