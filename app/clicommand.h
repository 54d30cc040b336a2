// SPDX-License-Identifier: MIT
#pragma once

// What every subcommand shares with the MCP server (app/mcpserver.*): a subcommand is a
// request struct and a function from it to a CommandOutput, with files read through a
// TraceSource. headroom-cli loads each file once and prints; the MCP server keeps files
// loaded between calls and answers the same JSON as structuredContent.

#include "core/replay/loadedtrace.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace headroom::cli {

/// A bad argument or an unreadable file, worded for the user (the loader's message names the
/// file, the byte offset and what was expected): headroom-cli prints it and exits 2; the MCP
/// server answers it as a JSON-RPC error.
struct CommandError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// What a subcommand concludes: `json` for --json and MCP (schema_version is added on the
/// way out), `text` for a terminal, and the exit code (1: a check failed).
struct CommandOutput {
    nlohmann::json json;
    std::string text;
    int exitCode = 0;
};

/// Where a subcommand gets a loaded file. Throws CommandError when it cannot.
using TraceSource = std::function<std::shared_ptr<const LoadedTrace>(const std::string& path)>;

/// Loads `path` with the loader; a missing file, bad input or running out of memory become
/// a CommandError.
std::shared_ptr<const LoadedTrace> loadTrace(const std::string& path);

/// `loadTrace` as a TraceSource (headroom-cli's: every file read once per run).
TraceSource directSource();

/// Prints `out` as --json or as text; returns its exit code.
int emit(const CommandOutput& out, bool json);

/// Runs `produce` and emits what it returns; a CommandError is printed as headroom-cli's one
/// line and exits 2.
int runAndEmit(const std::function<CommandOutput()>& produce, bool json);

/// "5%", "5", "12.5 %" -> 0.05, 0.05, 0.125; a CommandError naming `flag` for anything else, a
/// negative value or one at or above `max`.
double percentOption(const std::string& flag, const std::string& text, double max, const char* example);

/// The device a command looks at: the one with ordinal `ordinal` when given, else the one
/// every view opens on (primaryDeviceIndex: the OOM's, else the highest peak's). A
/// CommandError names the devices there are.
size_t pickDevice(const LoadedTrace& trace, std::optional<int> ordinal, const std::string& path);

/// The device at position `index` of `trace`, or a CommandError naming how many there are.
size_t devicePosition(const LoadedTrace& trace, int index, const std::string& flag);

} // namespace headroom::cli
