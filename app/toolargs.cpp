// SPDX-License-Identifier: MIT
#include "app/toolargs.h"

#include <cmath>
#include <limits>

namespace headroom::cli {

namespace {

bool hasType(const nlohmann::json& value, const std::string& type)
{
    if (type == "string")
        return value.is_string();
    if (type == "integer")
        return value.is_number_integer() ||
               (value.is_number_float() && value.get<double>() == double(int64_t(value.get<double>())));
    if (type == "number")
        return value.is_number();
    if (type == "boolean")
        return value.is_boolean();
    if (type == "array")
        return value.is_array();
    if (type == "object")
        return value.is_object();
    return false;
}

/// "an integer", "a string or an array of strings"...
std::string expected(const nlohmann::json& property)
{
    auto one = [](const nlohmann::json& p) {
        const std::string t = p.value("type", "");
        if (t == "array")
            return "an array of " + p["items"].value("type", std::string("value")) + "s";
        if (t == "integer")
            return std::string("an integer");
        return (t == "object" ? std::string("an ") : std::string("a ")) + t;
    };
    if (property.contains("anyOf")) {
        std::string s;
        for (const auto& p : property["anyOf"])
            s += (s.empty() ? "" : " or ") + one(p);
        return s;
    }
    return one(property);
}

bool matches(const nlohmann::json& value, const nlohmann::json& p)
{
    if (p.contains("anyOf")) {
        for (const auto& alt : p["anyOf"])
            if (matches(value, alt))
                return true;
        return false;
    }
    if (!hasType(value, p.value("type", "")))
        return false;
    if (p.contains("enum") && std::find(p["enum"].begin(), p["enum"].end(), value) == p["enum"].end())
        return false;
    if (p.contains("minimum") && value.is_number() && value.get<double>() < p["minimum"].get<double>())
        return false;
    if (value.is_array() && p.contains("items"))
        for (const auto& item : value)
            if (!matches(item, p["items"]))
                return false;
    return true;
}

} // namespace

ToolArgs::ToolArgs(const nlohmann::json& arguments, const nlohmann::json& schema, std::string tool)
    : m_args(arguments.is_null() ? nlohmann::json::object() : arguments)
    , m_tool(std::move(tool))
{
    if (!m_args.is_object())
        throw CommandError(m_tool + ": arguments: expected an object, got " + m_args.dump());
    const nlohmann::json& props = schema["properties"];
    for (const auto& [key, value] : m_args.items()) {
        if (!props.contains(key)) {
            std::string known;
            for (const auto& [k, v] : props.items())
                known += (known.empty() ? "" : ", ") + k;
            throw CommandError(m_tool + ": unknown argument '" + key + "' (arguments: " + known + ")");
        }
        if (!value.is_null())
            check(key, value, props[key]);
    }
    for (const auto& key : schema.value("required", nlohmann::json::array()))
        if (!has(key.get<std::string>()))
            throw CommandError(m_tool + ": missing argument '" + key.get<std::string>() + "' (" +
                               props[key.get<std::string>()].value("description", std::string()) + ")");
}

void ToolArgs::check(const std::string& key, const nlohmann::json& value, const nlohmann::json& property) const
{
    if (matches(value, property))
        return;
    std::string shown = value.dump();
    if (shown.size() > 80)
        shown = shown.substr(0, 77) + "...";
    std::string also;
    if (property.contains("minimum"))
        also = " of at least " + property["minimum"].dump();
    if (property.contains("enum"))
        also = " among " + property["enum"].dump();
    throw CommandError(m_tool + ": argument '" + key + "': expected " + expected(property) + also + ", got " + shown);
}

std::string ToolArgs::text(const std::string& key, const std::string& fallback) const
{
    return has(key) ? m_args[key].get<std::string>() : fallback;
}

std::optional<int> ToolArgs::integer(const std::string& key) const
{
    if (!has(key))
        return std::nullopt;
    return int(m_args[key].get<double>());
}

std::optional<double> ToolArgs::number(const std::string& key) const
{
    if (!has(key))
        return std::nullopt;
    return m_args[key].get<double>();
}

std::string ToolArgs::onOff(const std::string& key) const
{
    if (!has(key))
        return {};
    const nlohmann::json& v = m_args[key];
    return v.is_boolean() ? (v.get<bool>() ? "on" : "off") : v.get<std::string>();
}

std::vector<std::string> ToolArgs::texts(const std::string& key) const
{
    if (!has(key))
        return {};
    return m_args[key].get<std::vector<std::string>>();
}

std::vector<int> ToolArgs::integers(const std::string& key) const
{
    if (!has(key))
        return {};
    const nlohmann::json& v = m_args[key];
    if (!v.is_array())
        return {int(v.get<double>())};
    std::vector<int> out;
    for (const auto& x : v)
        out.push_back(int(x.get<double>()));
    return out;
}

namespace schema {

nlohmann::json text(const std::string& d)
{
    return {{"type", "string"}, {"description", d}};
}
nlohmann::json integer(const std::string& d, int minimum)
{
    return {{"type", "integer"}, {"minimum", minimum}, {"description", d}};
}
nlohmann::json number(const std::string& d)
{
    return {{"type", "number"}, {"description", d}};
}
nlohmann::json flag(const std::string& d)
{
    return {{"anyOf", {{{"type", "boolean"}}, {{"type", "string"}, {"enum", {"on", "off"}}}}}, {"description", d}};
}
nlohmann::json texts(const std::string& d)
{
    return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", d}};
}
nlohmann::json integers(const std::string& d)
{
    return {{"anyOf",
             {{{"type", "integer"}, {"minimum", 1}},
              {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 1}}}}}},
            {"description", d}};
}
nlohmann::json object(nlohmann::json properties, std::vector<std::string> required)
{
    nlohmann::json o = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
    if (!required.empty())
        o["required"] = required;
    return o;
}

} // namespace schema

} // namespace headroom::cli
