// SPDX-License-Identifier: MIT
#include "core/budget/budgetschema.h"

#include "core/budget/budgetstore.h"

#include <nlohmann/json.hpp>


namespace headroom {

namespace {

struct Column {
    const char* name;
    bool integer;
};

// The order of a row; budgetRowOf and budgetRunOfRow follow it.
const std::vector<Column>& columns()
{
    static const std::vector<Column> c = {
        {"run_id", false},          {"file_hash", false},       {"file", false},
        {"device", true},           {"source", false},          {"config_json", false},
        {"peak_allocated", true},   {"peak_reserved", true},    {"capacity", true},
        {"oom", true},              {"oom_iteration", true},    {"worst_iteration", true},
        {"iteration_peaks_json", false}, {"categories_json", false}, {"max_step_tokens", true},
        {"worst_case_tokens", true}, {"recorded_at", false},    {"tool_version", false},
        {"projection_json", false},
    };
    return c;
}

template <typename T>
std::optional<std::string> text(const std::optional<T>& v)
{
    return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt;
}

int64_t integer(const std::optional<std::string>& v, const char* column, const std::string& store)
{
    try {
        size_t used = 0;
        const long long x = std::stoll(v.value(), &used);
        if (used == v->size())
            return x;
    } catch (const std::exception&) {
    }
    throw BudgetStoreError(store + ": column " + column + " holds '" + v.value_or("NULL") +
                           "', expected an integer");
}

std::optional<int64_t> optionalInteger(const std::optional<std::string>& v, const char* column, const std::string& store)
{
    return v ? std::optional<int64_t>(integer(v, column, store)) : std::nullopt;
}

nlohmann::json parsed(const std::optional<std::string>& v, const char* column, const std::string& store)
{
    const nlohmann::json j = nlohmann::json::parse(v.value_or(""), nullptr, false);
    if (j.is_discarded())
        throw BudgetStoreError(store + ": column " + std::string(column) + " is not JSON");
    return j;
}

// Nullable columns added to version 1 after it shipped (the stores add them on open): a writer
// that does not know them, such as an older headroom_record, leaves them NULL and stays right.
const std::vector<std::pair<std::string, std::string>> kAddedColumns = {{"projection_json", "TEXT"}};

std::optional<std::string> projectionText(const std::optional<BudgetRun::Projected>& p)
{
    if (!p)
        return std::nullopt;
    nlohmann::json j = {{"peak_bytes", p->peak}, {"peak_high_bytes", p->peakHigh}, {"margin_left", p->marginLeft}};
    if (p->context)
        j["context_bytes"] = *p->context;
    return j.dump();
}

std::optional<BudgetRun::Projected> projectionOf(const std::optional<std::string>& v, const std::string& store)
{
    if (!v)
        return std::nullopt;
    const nlohmann::json j = parsed(v, "projection_json", store);
    BudgetRun::Projected p{j.at("peak_bytes").get<int64_t>(), j.at("peak_high_bytes").get<int64_t>(),
                           j.at("margin_left").get<double>(), std::nullopt};
    if (j.contains("context_bytes"))
        p.context = j.at("context_bytes").get<int64_t>();
    return p;
}

} // namespace

const std::vector<std::string>& budgetColumns()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const Column& c : columns())
            n.push_back(c.name);
        return n;
    }();
    return names;
}

bool budgetColumnIsInteger(size_t i) { return columns().at(i).integer; }

const std::vector<std::pair<std::string, std::string>>& budgetAddedColumns() { return kAddedColumns; }

std::vector<std::string> budgetMigration(int fromVersion)
{
    if (fromVersion == 0)
        return {
            "CREATE TABLE IF NOT EXISTS headroom_budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS headroom_budget_runs ("
            "run_id TEXT PRIMARY KEY, file_hash TEXT, file TEXT, device INTEGER NOT NULL, "
            "source TEXT NOT NULL, config_json TEXT NOT NULL, peak_allocated BIGINT NOT NULL, "
            "peak_reserved BIGINT, capacity BIGINT, oom INTEGER NOT NULL, oom_iteration INTEGER, "
            "worst_iteration INTEGER, iteration_peaks_json TEXT NOT NULL, categories_json TEXT NOT NULL, "
            "max_step_tokens BIGINT, worst_case_tokens BIGINT, recorded_at TEXT NOT NULL, "
            "tool_version TEXT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS headroom_budget_runs_time ON headroom_budget_runs (recorded_at)",
        };
    return {};
}

std::string budgetInsertSql(SqlParameters parameters)
{
    std::string names, values;
    for (size_t i = 0; i < columns().size(); ++i) {
        if (i > 0) {
            names.append(", ");
            values.append(", ");
        }
        names.append(columns()[i].name);
        if (parameters == SqlParameters::Numbered)
            values.append("$").append(std::to_string(i + 1));
        else
            values.append("?");
    }
    return "INSERT INTO headroom_budget_runs (" + names + ") VALUES (" + values + ") ON CONFLICT (run_id) DO NOTHING";
}

std::string budgetSelectSql()
{
    std::string names;
    for (size_t i = 0; i < columns().size(); ++i)
        names.append(i ? ", " : "").append(columns()[i].name);
    return "SELECT " + names + " FROM headroom_budget_runs ORDER BY recorded_at, run_id";
}

BudgetRow budgetRowOf(const BudgetRun& r)
{
    nlohmann::json config = r.config;
    nlohmann::json peaks = r.iterationPeaks;
    nlohmann::json categories = r.categoriesAtPeak;
    return {r.runId,
            r.fileHash.empty() ? std::nullopt : std::optional<std::string>(r.fileHash),
            r.file.empty() ? std::nullopt : std::optional<std::string>(r.file),
            std::to_string(r.device),
            r.source,
            config.dump(),
            std::to_string(r.peakAllocated),
            text(r.peakReserved),
            text(r.capacity),
            std::string(r.oom ? "1" : "0"),
            text(r.oomIteration),
            text(r.worstIteration),
            peaks.dump(),
            categories.dump(),
            text(r.maxStepTokens),
            text(r.worstCaseTokens),
            r.recordedAt,
            r.toolVersion,
            projectionText(r.projected)};
}

BudgetRun budgetRunOfRow(const BudgetRow& row, const std::string& store)
{
    if (row.size() != columns().size())
        throw BudgetStoreError(store + ": a row of " + std::to_string(row.size()) + " columns, expected " +
                               std::to_string(columns().size()));
    BudgetRun r;
    r.runId = row[0].value_or("");
    r.fileHash = row[1].value_or("");
    r.file = row[2].value_or("");
    r.device = int(integer(row[3], "device", store));
    r.source = row[4].value_or("");
    try {
        r.config = parsed(row[5], "config_json", store).get<BudgetConfig>();
        r.iterationPeaks = parsed(row[12], "iteration_peaks_json", store).get<std::vector<int64_t>>();
        r.categoriesAtPeak = parsed(row[13], "categories_json", store).get<std::map<std::string, int64_t>>();
    } catch (const nlohmann::json::exception& e) {
        throw BudgetStoreError(store + ": run " + r.runId + " has JSON of another shape (" + e.what() + ")");
    }
    r.peakAllocated = integer(row[6], "peak_allocated", store);
    r.peakReserved = optionalInteger(row[7], "peak_reserved", store);
    r.capacity = optionalInteger(row[8], "capacity", store);
    r.oom = integer(row[9], "oom", store) != 0;
    if (auto v = optionalInteger(row[10], "oom_iteration", store))
        r.oomIteration = int(*v);
    if (auto v = optionalInteger(row[11], "worst_iteration", store))
        r.worstIteration = int(*v);
    r.maxStepTokens = optionalInteger(row[14], "max_step_tokens", store);
    r.worstCaseTokens = optionalInteger(row[15], "worst_case_tokens", store);
    r.recordedAt = row[16].value_or("");
    r.toolVersion = row[17].value_or("");
    try {
        r.projected = projectionOf(row[18], store);
    } catch (const nlohmann::json::exception& e) {
        throw BudgetStoreError(store + ": run " + r.runId + " has a projection_json of another shape (" + e.what() + ")");
    }
    return r;
}

BudgetRun budgetRunOfJsonRow(const nlohmann::json& j, const std::string& source)
{
    if (!j.is_object())
        throw BudgetStoreError(source + ": expected a JSON object with the run's columns");
    BudgetRow row;
    for (const std::string& c : budgetColumns()) {
        const auto it = j.find(c);
        if (it == j.end() || it->is_null())
            row.emplace_back();
        else if (it->is_string())
            row.emplace_back(it->get<std::string>());
        else if (it->is_number_integer() || it->is_boolean())
            row.emplace_back(std::to_string(it->is_boolean() ? int(it->get<bool>()) : it->get<int64_t>()));
        else
            throw BudgetStoreError(source + ": column " + c + " is " + it->type_name() + ", expected text or an integer");
    }
    return budgetRunOfRow(row, source);
}

} // namespace headroom
