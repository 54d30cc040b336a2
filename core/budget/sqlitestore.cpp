// SPDX-License-Identifier: MIT
#include "core/budget/sqlitestore.h"

#include "core/budget/budgetschema.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace headroom {

namespace {

// Sixteen ranks recording at the end of one job wait for each other's single INSERT; a
// minute is far past any such wait and still ends a stuck writer.
constexpr int kBusyTimeoutMs = 60000;

/// One prepared statement, finalized on every path.
class Statement {
public:
    Statement(sqlite3* db, const std::string& sql) { m_ok = sqlite3_prepare_v2(db, sql.c_str(), -1, &m_s, nullptr) == SQLITE_OK; }
    ~Statement() { sqlite3_finalize(m_s); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    bool ok() const { return m_ok; }
    sqlite3_stmt* get() const { return m_s; }

private:
    sqlite3_stmt* m_s = nullptr;
    bool m_ok = false;
};

} // namespace

SqliteStore::SqliteStore(const std::string& path)
    : m_path(path)
{
    // A constructor that throws runs no destructor: the handle is closed here.
    try {
        open();
    } catch (...) {
        sqlite3_close(m_db);
        m_db = nullptr;
        throw;
    }
}

void SqliteStore::open()
{
    if (sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
        fail("cannot open it as an SQLite database");
    sqlite3_busy_timeout(m_db, kBusyTimeoutMs);
    // The version is read before anything is written, so a newer store or a file that is not
    // a database is refused as it is.
    const int version = schemaVersion();
    if (version > kBudgetSchemaVersion)
        throw BudgetStoreError(m_path + ": a budget store of schema version " + std::to_string(version) +
                               "; this Headroom reads up to version " + std::to_string(kBudgetSchemaVersion) +
                               " (left unchanged; use a newer Headroom)");
    enableWal();
    if (version < kBudgetSchemaVersion)
        migrate();
    addMissingColumns();
}

SqliteStore::~SqliteStore() { sqlite3_close(m_db); }

void SqliteStore::fail(const std::string& doing) const
{
    throw BudgetStoreError(m_path + ": " + doing + " (SQLite: " + (m_db ? sqlite3_errmsg(m_db) : "out of memory") + ")");
}

void SqliteStore::exec(const std::string& sql)
{
    if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
        fail("cannot run '" + sql.substr(0, sql.find(' ', 12)) + "...'");
}

void SqliteStore::enableWal()
{
    // Switching a new store to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY
    // at once, without the busy handler, while another writer switches it: retried here up
    // to the busy timeout.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (;;) {
        const int rc = sqlite3_exec(m_db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
        if (rc == SQLITE_OK)
            return;
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > deadline)
            fail("cannot switch it to WAL");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

int SqliteStore::schemaVersion()
{
    Statement has(m_db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'headroom_budget_meta'");
    if (!has.ok() || sqlite3_step(has.get()) != SQLITE_ROW)
        fail("cannot read it as a budget store");
    if (sqlite3_column_int(has.get(), 0) == 0)
        return 0;
    Statement v(m_db, "SELECT value FROM headroom_budget_meta WHERE key = 'schema_version'");
    if (!v.ok())
        fail("cannot read its schema version");
    const int rc = sqlite3_step(v.get());
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        fail("cannot read its schema version");
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(v.get(), 0));
    return text ? std::atoi(text) : 0;
}

void SqliteStore::migrate()
{
    // IMMEDIATE: two writers opening a new store at once migrate one after the other, and the
    // second finds the version the first wrote.
    exec("BEGIN IMMEDIATE");
    try {
        for (int v = schemaVersion(); v < kBudgetSchemaVersion; ++v)
            for (const std::string& sql : budgetMigration(v))
                exec(sql);
        Statement set(m_db, "INSERT INTO headroom_budget_meta (key, value) VALUES ('schema_version', ?) "
                            "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
        const std::string version = std::to_string(kBudgetSchemaVersion);
        if (!set.ok() || sqlite3_bind_text(set.get(), 1, version.c_str(), -1, SQLITE_TRANSIENT) != SQLITE_OK ||
            sqlite3_step(set.get()) != SQLITE_DONE)
            fail("cannot write its schema version");
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

bool SqliteStore::hasColumn(const std::string& column)
{
    Statement s(m_db, "SELECT count(*) FROM pragma_table_info('headroom_budget_runs') WHERE name = ?");
    if (!s.ok() || sqlite3_bind_text(s.get(), 1, column.c_str(), -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_step(s.get()) != SQLITE_ROW)
        fail("cannot read its columns");
    return sqlite3_column_int(s.get(), 0) > 0;
}

void SqliteStore::addMissingColumns()
{
    for (const auto& [column, type] : budgetAddedColumns()) {
        if (hasColumn(column))
            continue;
        // IMMEDIATE, and asked again inside: a second writer opening the store at once finds
        // the column the first added.
        exec("BEGIN IMMEDIATE");
        try {
            if (!hasColumn(column))
                exec("ALTER TABLE headroom_budget_runs ADD COLUMN " + column + " " + type);
            exec("COMMIT");
        } catch (...) {
            sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }
}

bool SqliteStore::add(const BudgetRun& run)
{
    Statement s(m_db, budgetInsertSql(SqlParameters::QuestionMarks));
    if (!s.ok())
        fail("cannot prepare a run's INSERT");
    const BudgetRow row = budgetRowOf(run);
    for (size_t i = 0; i < row.size(); ++i) {
        const int at = int(i) + 1;
        int rc;
        if (!row[i])
            rc = sqlite3_bind_null(s.get(), at);
        else if (budgetColumnIsInteger(i))
            rc = sqlite3_bind_int64(s.get(), at, std::stoll(*row[i]));
        else
            rc = sqlite3_bind_text(s.get(), at, row[i]->c_str(), int(row[i]->size()), SQLITE_TRANSIENT);
        if (rc != SQLITE_OK)
            fail("cannot bind column " + budgetColumns()[i]);
    }
    if (sqlite3_step(s.get()) != SQLITE_DONE)
        fail("cannot record run " + run.runId);
    return sqlite3_changes(m_db) == 1;
}

std::vector<BudgetRun> SqliteStore::runs()
{
    Statement s(m_db, budgetSelectSql());
    if (!s.ok())
        fail("cannot read its runs");
    std::vector<BudgetRun> out;
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
        BudgetRow row(budgetColumns().size());
        for (size_t i = 0; i < row.size(); ++i)
            if (sqlite3_column_type(s.get(), int(i)) != SQLITE_NULL)
                row[i] = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), int(i)));
        out.push_back(budgetRunOfRow(row, m_path));
    }
    if (rc != SQLITE_DONE)
        fail("cannot read its runs");
    return out;
}

} // namespace headroom
