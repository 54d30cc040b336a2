// SPDX-License-Identifier: MIT
#include "app/mcpserver.h"

#include "app/clijson.h"
#include "app/mcptools.h"
#include "core/analysis/summary.h"

#include <iostream>

namespace headroom::cli {

namespace {

using nlohmann::json;

// JSON-RPC 2.0's codes, and MCP's for a resource it does not have.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kResourceNotFound = -32002;

struct RpcError {
    int code;
    std::string message;
};

json errorResponse(const json& id, int code, const std::string& message)
{
    return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

const char* kInstructions =
    "Headroom reads PyTorch memory snapshots (torch.cuda.memory._snapshot pickles), profiler memory timelines, "
    "Chrome/Kineto traces and .hrt files. Start with `open` on the file (absolute path), then `diagnose` for what "
    "went wrong and the first move, `peak` for what was alive at the peak and which code allocated it, `whatif` / "
    "`ladder` for what would fit. Sizes are bytes; the keys are those of `headroom-cli --json` (docs/cli-json.md).";

std::string fileUri(const std::string& path)
{
    return "file://" + path;
}

} // namespace

const std::vector<std::string>& McpServer::protocolVersions()
{
    static const std::vector<std::string> v = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
    return v;
}

int McpServer::run(std::istream& in, std::ostream& out)
{
    for (std::string line; std::getline(in, line);) {
        if (auto response = handle(line)) {
            // One line each: dump() without indentation escapes every newline inside strings.
            out << response->dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
            out.flush();
        }
    }
    return 0;
}

std::optional<json> McpServer::handle(const std::string& line)
{
    // Nothing a client sends may end the session: whatever escapes the checks below (a
    // nlohmann type_error on a field of an unexpected type) is still an answer.
    try {
        return respond(line);
    } catch (const std::exception& e) {
        return errorResponse(nullptr, kInvalidRequest, std::string("Invalid request: ") + e.what());
    }
}

std::optional<json> McpServer::respond(const std::string& line)
{
    if (line.find_first_not_of(" \t\r") == std::string::npos)
        return std::nullopt;
    json message;
    try {
        message = json::parse(line);
    } catch (const json::parse_error& e) {
        return errorResponse(nullptr, kParseError, std::string("Parse error: ") + e.what());
    }
    if (message.is_array())
        return errorResponse(nullptr, kInvalidRequest,
                             "Invalid request: batches are not supported; send one message per line");
    const bool hasId = message.is_object() && message.contains("id");
    // JSON-RPC ids are strings or numbers; anything else is answered with a null id.
    const json id = hasId && (message["id"].is_string() || message["id"].is_number()) ? message["id"] : json(nullptr);
    const bool versionOk = message.is_object() && message.contains("jsonrpc") && message["jsonrpc"] == "2.0";
    if (!versionOk || !message.contains("method") || !message["method"].is_string() || (hasId && id.is_null()))
        return hasId || !message.is_object()
                   ? std::optional(errorResponse(
                         id, kInvalidRequest,
                         "Invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": ..., \"id\": ...}"))
                   : std::nullopt; // a response from the client (we send no requests): ignore
    const std::string method = message["method"].get<std::string>();
    const json params = message.contains("params") ? message["params"] : json::object();
    if (!hasId)
        return std::nullopt; // notifications/initialized, notifications/cancelled, ...: nothing to answer
    try {
        return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", dispatch(method, params)}};
    } catch (const RpcError& e) {
        return errorResponse(id, e.code, e.message);
    } catch (const CommandError& e) {
        return errorResponse(id, kInvalidParams, e.what());
    } catch (const std::bad_alloc&) {
        return errorResponse(id, kInternalError, method + ": out of memory");
    } catch (const std::exception& e) {
        return errorResponse(id, kInternalError, method + ": " + e.what());
    }
}

json McpServer::dispatch(const std::string& method, const json& params)
{
    if (!params.is_object())
        throw RpcError{kInvalidParams, method + ": params: expected an object"};
    if (method == "initialize")
        return initialize(params);
    if (method == "ping")
        return json::object();
    if (method == "tools/list")
        return listTools();
    if (method == "tools/call")
        return callTool(params);
    if (method == "resources/list")
        return listResources();
    if (method == "resources/read")
        return readResource(params);
    if (method == "resources/templates/list")
        return {{"resourceTemplates", json::array()}};
    throw RpcError{kMethodNotFound, "Method not found: " + method};
}

json McpServer::initialize(const json& params) const
{
    const std::string asked = params.contains("protocolVersion") && params["protocolVersion"].is_string()
                                  ? params["protocolVersion"].get<std::string>()
                                  : "";
    const auto& versions = protocolVersions();
    const bool known = std::find(versions.begin(), versions.end(), asked) != versions.end();
    return {{"protocolVersion", known ? asked : versions.front()},
            {"capabilities", {{"tools", {{"listChanged", false}}}, {"resources", {{"listChanged", false}}}}},
            {"serverInfo",
             {{"name", "headroom"}, {"title", "Headroom memory-profile explorer"}, {"version", HEADROOM_VERSION}}},
            {"instructions", kInstructions}};
}

json McpServer::listTools() const
{
    json tools = json::array();
    for (const McpTool& t : mcpTools())
        tools.push_back({{"name", t.name},
                         {"description", t.description},
                         {"inputSchema", t.inputSchema},
                         {"outputSchema", t.outputSchema}});
    return {{"tools", std::move(tools)}};
}

json McpServer::callTool(const json& params)
{
    if (!params.contains("name") || !params["name"].is_string())
        throw RpcError{kInvalidParams, "tools/call: expected params.name, the tool's name"};
    const std::string name = params["name"].get<std::string>();
    const McpTool* tool = findMcpTool(name);
    if (!tool) {
        std::string names;
        for (const McpTool& t : mcpTools())
            names += (names.empty() ? "" : ", ") + t.name;
        throw RpcError{kInvalidParams, "Unknown tool: " + name + " (tools: " + names + ")"};
    }
    CommandOutput out = tool->call(params.contains("arguments") ? params["arguments"] : json::object(), m_cache);
    out.json["schema_version"] = kJsonSchemaVersion;
    return {{"content", json::array({{{"type", "text"}, {"text", out.text}}})},
            {"structuredContent", std::move(out.json)},
            {"isError", false}};
}

json McpServer::listResources() const
{
    json list = json::array();
    for (const TraceCache::Open& o : m_cache.open())
        list.push_back(
            {{"uri", fileUri(o.path)},
             {"name", o.path.substr(o.path.find_last_of('/') + 1)},
             {"description", o.format + ", " + std::to_string(o.devices) + " device(s); reads as its summary JSON"},
             {"mimeType", "application/json"}});
    return {{"resources", std::move(list)}};
}

json McpServer::readResource(const json& params)
{
    const std::string uri = params.contains("uri") && params["uri"].is_string() ? params["uri"].get<std::string>() : "";
    const std::string prefix = "file://";
    // Only files a tool opened: a resource read never names a new path to read.
    const auto path = uri.rfind(prefix, 0) == 0 ? m_cache.openPath(uri.substr(prefix.size())) : std::nullopt;
    if (!path)
        throw RpcError{kResourceNotFound,
                       "Resource not found: " + uri + " (resources are the files opened with a tool)"};
    json summary = summaryJson(*m_cache.load(*path));
    summary["schema_version"] = kJsonSchemaVersion;
    return {{"contents", json::array({{{"uri", uri}, {"mimeType", "application/json"}, {"text", summary.dump()}}})}};
}

} // namespace headroom::cli
