// SPDX-License-Identifier: MIT
#include "core/budget/postgresstore.h"

#include "core/budget/budgetschema.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <memory>

namespace headroom {

namespace {

// Any constant no other tool of the database is likely to take: "hroom" in ASCII.
constexpr long long kMigrationLock = 0x68726f6f6dLL;

struct ResultFree {
    void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

std::string firstLine(const char* message)
{
    std::string m = message ? message : "";
    const size_t nl = m.find('\n');
    return nl == std::string::npos ? m : m.substr(0, nl);
}

} // namespace

PostgresStore::PostgresStore(const std::string& url)
    : m_name(redactStoreUrl(url))
{
    // A constructor that throws runs no destructor: the connection is closed here.
    try {
        connect(url);
    } catch (...) {
        PQfinish(m_conn);
        m_conn = nullptr;
        throw;
    }
}

void PostgresStore::connect(const std::string& url)
{
    m_conn = PQconnectdb(url.c_str());
    if (!m_conn || PQstatus(m_conn) != CONNECTION_OK)
        fail("cannot connect");
    // Notices (a table that already exists) are not the user's business.
    PQsetNoticeProcessor(m_conn, [](void*, const char*) {}, nullptr);
    const int version = schemaVersion();
    if (version > kBudgetSchemaVersion)
        throw BudgetStoreError(m_name + ": a budget store of schema version " + std::to_string(version) +
                               "; this Headroom reads up to version " + std::to_string(kBudgetSchemaVersion) +
                               " (left unchanged; use a newer Headroom)");
    if (version < kBudgetSchemaVersion)
        migrate();
    addMissingColumns();
}

PostgresStore::~PostgresStore() { PQfinish(m_conn); }

void PostgresStore::fail(const std::string& doing) const
{
    // libpq's messages name the host and the user, never the password.
    throw BudgetStoreError(m_name + ": " + doing + " (PostgreSQL: " +
                           firstLine(m_conn ? PQerrorMessage(m_conn) : "out of memory") + ")");
}

void PostgresStore::exec(const std::string& sql)
{
    Result r(PQexec(m_conn, sql.c_str()));
    const ExecStatusType s = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        fail("cannot run '" + sql.substr(0, sql.find(' ', 12)) + "...'");
}

int PostgresStore::schemaVersion()
{
    Result has(PQexec(m_conn, "SELECT to_regclass('headroom_budget_meta') IS NOT NULL"));
    if (!has || PQresultStatus(has.get()) != PGRES_TUPLES_OK || PQntuples(has.get()) != 1)
        fail("cannot read it as a budget store");
    if (std::string(PQgetvalue(has.get(), 0, 0)) != "t")
        return 0;
    Result v(PQexec(m_conn, "SELECT value FROM headroom_budget_meta WHERE key = 'schema_version'"));
    if (!v || PQresultStatus(v.get()) != PGRES_TUPLES_OK)
        fail("cannot read its schema version");
    return PQntuples(v.get()) == 1 ? std::atoi(PQgetvalue(v.get(), 0, 0)) : 0;
}

void PostgresStore::migrate()
{
    exec("BEGIN");
    try {
        exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLock) + ")");
        for (int v = schemaVersion(); v < kBudgetSchemaVersion; ++v)
            for (const std::string& sql : budgetMigration(v))
                exec(sql);
        const std::string version = std::to_string(kBudgetSchemaVersion);
        const char* values[] = {version.c_str()};
        Result r(PQexecParams(m_conn,
                              "INSERT INTO headroom_budget_meta (key, value) VALUES ('schema_version', $1) "
                              "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                              1, nullptr, values, nullptr, nullptr, 0));
        if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK)
            fail("cannot write its schema version");
        exec("COMMIT");
    } catch (...) {
        Result(PQexec(m_conn, "ROLLBACK"));
        throw;
    }
}

void PostgresStore::addMissingColumns()
{
    for (const auto& [column, type] : budgetAddedColumns()) {
        const char* values[] = {column.c_str()};
        Result r(PQexecParams(m_conn,
                              "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
                              "AND table_name = 'headroom_budget_runs' AND column_name = $1",
                              1, nullptr, values, nullptr, nullptr, 0));
        if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1)
            fail("cannot read its columns");
        // Asked first, so a store that has the column takes no ALTER's lock on every open.
        if (std::string(PQgetvalue(r.get(), 0, 0)) == "0")
            exec("ALTER TABLE headroom_budget_runs ADD COLUMN IF NOT EXISTS " + column + " " + type);
    }
}

bool PostgresStore::add(const BudgetRun& run)
{
    const BudgetRow row = budgetRowOf(run);
    std::vector<const char*> values(row.size());
    for (size_t i = 0; i < row.size(); ++i)
        values[i] = row[i] ? row[i]->c_str() : nullptr;
    Result r(PQexecParams(m_conn, budgetInsertSql(SqlParameters::Numbered).c_str(), int(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0));
    if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK)
        fail("cannot record run " + run.runId);
    return std::string(PQcmdTuples(r.get())) == "1";
}

std::vector<BudgetRun> PostgresStore::runs()
{
    Result r(PQexec(m_conn, budgetSelectSql().c_str()));
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        fail("cannot read its runs");
    std::vector<BudgetRun> out;
    const int width = PQnfields(r.get());
    for (int t = 0; t < PQntuples(r.get()); ++t) {
        BudgetRow row(static_cast<size_t>(width));
        for (int c = 0; c < width; ++c)
            if (!PQgetisnull(r.get(), t, c))
                row[size_t(c)] = PQgetvalue(r.get(), t, c);
        out.push_back(budgetRunOfRow(row, m_name));
    }
    return out;
}

} // namespace headroom
