// SPDX-License-Identifier: MIT
#pragma once

// An MCP tool's arguments checked against its input schema (the subset of JSON Schema the
// tools use: an object of typed properties, `required`, `minimum`, arrays of a typed item,
// a choice of types), so a bad call gets one message naming the argument and what was
// expected instead of a default silently used.

#include "app/clicommand.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

class ToolArgs {
public:
    /// Throws CommandError when `arguments` is not an object, lacks a required argument, has
    /// one the schema does not list, or has one of the wrong type.
    ToolArgs(const nlohmann::json& arguments, const nlohmann::json& schema, std::string tool);

    bool has(const std::string& key) const { return m_args.contains(key) && !m_args[key].is_null(); }
    std::string text(const std::string& key, const std::string& fallback = {}) const;
    std::optional<int> integer(const std::string& key) const;
    std::optional<double> number(const std::string& key) const;
    /// A boolean, or "on"/"off" as the CLI spells it: "" when absent.
    std::string onOff(const std::string& key) const;
    std::vector<std::string> texts(const std::string& key) const;
    /// An integer or an array of integers.
    std::vector<int> integers(const std::string& key) const;

private:
    void check(const std::string& key, const nlohmann::json& value, const nlohmann::json& property) const;
    nlohmann::json m_args;
    std::string m_tool;
};

/// Schema builders for the tools' input schemas.
namespace schema {
nlohmann::json text(const std::string& description);
nlohmann::json integer(const std::string& description, int minimum);
nlohmann::json number(const std::string& description);
nlohmann::json flag(const std::string& description); ///< boolean, or "on"/"off"
nlohmann::json texts(const std::string& description);
nlohmann::json integers(const std::string& description); ///< an integer or an array of them
nlohmann::json object(nlohmann::json properties, std::vector<std::string> required);
} // namespace schema

} // namespace headroom::cli
