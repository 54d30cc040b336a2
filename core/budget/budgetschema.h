// SPDX-License-Identifier: MIT
#pragma once

// The budget store's schema and its rows, shared by the SQLite and PostgreSQL stores (and
// spelled the same in python/headroom_record.py's run metric, which writes SQLite with the
// standard library). Every value travels as text or NULL; a store binds integer columns as
// integers where its API has them.

#include "core/budget/budgetrun.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

using BudgetRow = std::vector<std::optional<std::string>>;

/// The runs table's columns, in the order of a row.
const std::vector<std::string>& budgetColumns();
/// Whether column `i` holds an integer.
bool budgetColumnIsInteger(size_t i);
/// Columns (name, SQL type) version 1 gained after it shipped: nullable, so every writer of
/// version 1 stays right without them, and added by a store that lacks them when it opens.
const std::vector<std::pair<std::string, std::string>>& budgetAddedColumns();

/// The statements that take a store at schema version v to v + 1, for v from 0 (an empty
/// store) to kBudgetSchemaVersion - 1. Standard SQL both stores accept.
std::vector<std::string> budgetMigration(int fromVersion);

/// How a store's SQL marks a bound parameter: "?" (SQLite), "$1", "$2", ... (PostgreSQL).
enum class SqlParameters { QuestionMarks, Numbered };

/// "INSERT ... ON CONFLICT (run_id) DO NOTHING", every value a bound parameter.
std::string budgetInsertSql(SqlParameters parameters);
/// "SELECT <the columns> FROM ... ORDER BY recorded_at, run_id".
std::string budgetSelectSql();

BudgetRow budgetRowOf(const BudgetRun& run);
/// Throws BudgetStoreError naming `store` when a row is not one this build wrote.
BudgetRun budgetRunOfRow(const BudgetRow& row, const std::string& store);

/// A run from a JSON object with the row's columns as keys (the recorder's run metric, as
/// `budget record --metric-json` reads it); integers may be numbers or text, absent keys NULL.
/// Throws BudgetStoreError naming `source` when a value has another type or the row is bad.
BudgetRun budgetRunOfJsonRow(const nlohmann::json& row, const std::string& source);

} // namespace headroom
