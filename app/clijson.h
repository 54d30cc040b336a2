// SPDX-License-Identifier: MIT
#pragma once

// Every `--json` output of headroom-cli goes through here so that each carries
// `"schema_version"` at its top level: scripts in CI pipelines check it
// before they read keys. docs/cli-json.md lists the keys of each subcommand; bump the
// version when a documented key changes meaning or disappears (adding keys does not).

#include <nlohmann/json.hpp>

#include <iostream>

namespace headroom::cli {

inline constexpr int kJsonSchemaVersion = 2;

/// Adds schema_version to `j` (an object) and prints it as every subcommand does.
inline void printJson(nlohmann::json j)
{
    j["schema_version"] = kJsonSchemaVersion;
    std::cout << j.dump(1) << "\n";
}

} // namespace headroom::cli
