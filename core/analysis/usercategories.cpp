// SPDX-License-Identifier: MIT
#include "core/analysis/usercategories.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace headroom {

namespace {

std::string ruleLabel(const std::string& source, size_t index, const std::string& name)
{
    std::string s = source + ": rule " + std::to_string(index + 1);
    if (!name.empty())
        s += " (\"" + name + "\")";
    return s;
}

bool isColor(const std::string& c)
{
    return c.size() == 7 && c[0] == '#' &&
           std::all_of(c.begin() + 1, c.end(), [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
}

std::regex compile(const std::string& pattern, const std::string& where, const char* key)
{
    try {
        return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
        throw UserCategoriesError(where + ": \"" + key + "\" is not a valid regular expression (" + e.what() + "): " +
                                 pattern);
    }
}

UserCategoryRule readRule(const nlohmann::json& j, size_t index, const std::string& source)
{
    std::string where = ruleLabel(source, index, "");
    if (!j.is_object())
        throw UserCategoriesError(where + ": expected an object with \"name\" and at least one of \"function\", "
                                 "\"file\", \"metadata\"");
    UserCategoryRule r;
    auto text = [&](const char* key, std::string& out) {
        const auto it = j.find(key);
        if (it == j.end())
            return;
        if (!it->is_string())
            throw UserCategoriesError(where + ": \"" + key + "\" must be a string");
        out = it->get<std::string>();
    };
    text("name", r.name);
    where = ruleLabel(source, index, r.name);
    for (const auto& [key, value] : j.items())
        if (key != "name" && key != "function" && key != "file" && key != "metadata" && key != "color")
            throw UserCategoriesError(where + ": unknown key \"" + key +
                                     "\" (a rule has name, function, file, metadata and color)");
    if (r.name.empty())
        throw UserCategoriesError(where + ": \"name\" is missing or empty");
    text("function", r.function);
    text("file", r.file);
    text("metadata", r.metadata);
    text("color", r.color);
    if (r.function.empty() && r.file.empty() && r.metadata.empty())
        throw UserCategoriesError(where + ": needs at least one of \"function\", \"file\", \"metadata\"");
    if (!r.color.empty() && !isColor(r.color))
        throw UserCategoriesError(where + ": \"color\" must be #rrggbb, got \"" + r.color + "\"");
    if (!r.function.empty())
        r.functionRe = compile(r.function, where, "function");
    if (!r.file.empty())
        r.fileRe = compile(r.file, where, "file");
    if (!r.metadata.empty())
        r.metadataRe = compile(r.metadata, where, "metadata");
    return r;
}

} // namespace

UserCategories UserCategories::parse(std::string_view text, const std::string& source)
{
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw UserCategoriesError(source + ": not JSON at byte " + std::to_string(e.byte) +
                                 ": expected {\"categories\": [...]} (" + e.what() + ")");
    }
    const nlohmann::json* list = &j;
    if (j.is_object()) {
        const auto it = j.find("categories");
        if (it == j.end())
            throw UserCategoriesError(source + ": expected a \"categories\" array of rules");
        list = &*it;
    }
    if (!list->is_array())
        throw UserCategoriesError(source + ": \"categories\" must be an array of rules");
    UserCategories out;
    out.m_source = source;
    for (size_t i = 0; i < list->size(); ++i) {
        out.m_rules.push_back(readRule((*list)[i], i, source));
        for (size_t k = 0; k + 1 < out.m_rules.size(); ++k)
            if (out.m_rules[k].name == out.m_rules.back().name)
                throw UserCategoriesError(ruleLabel(source, i, out.m_rules.back().name) + ": the name is already rule " +
                                         std::to_string(k + 1) + "'s");
        out.m_anyMetadata = out.m_anyMetadata || !out.m_rules.back().metadata.empty();
    }
    return out;
}

UserCategories UserCategories::load(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UserCategoriesError(path + ": cannot read the categories file");
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse(ss.str(), path);
}

bool UserCategories::matchesFrames(const UserCategoryRule& r, const FrameTable& ft, uint32_t stack) const
{
    if (r.function.empty() && r.file.empty())
        return true;
    auto found = [](std::string_view text, const std::regex& re) { return std::regex_search(text.begin(), text.end(), re); };
    for (uint32_t f : ft.stack(stack)) {
        const Frame& fr = ft.frame(f);
        if ((r.function.empty() || found(ft.strings().get(fr.name), r.functionRe)) &&
            (r.file.empty() || found(ft.strings().get(fr.file), r.fileRe)))
            return true;
    }
    return false;
}

int UserCategories::match(const FrameTable& ft, uint32_t stack, std::string_view metadata, StackMatches& cache) const
{
    auto it = cache.find(stack);
    if (it == cache.end()) {
        std::vector<bool> m(m_rules.size());
        for (size_t i = 0; i < m_rules.size(); ++i)
            m[i] = matchesFrames(m_rules[i], ft, stack);
        it = cache.emplace(stack, std::move(m)).first;
    }
    for (size_t i = 0; i < m_rules.size(); ++i) {
        if (!it->second[i])
            continue;
        const UserCategoryRule& r = m_rules[i];
        if (r.metadata.empty() || std::regex_search(metadata.begin(), metadata.end(), r.metadataRe))
            return int(i);
    }
    return -1;
}

} // namespace headroom
