// SPDX-License-Identifier: MIT
#pragma once

// The budget store in an SQLite file (docs/budget.md): WAL mode and a busy timeout, so the
// ranks and jobs of one machine record at once; a single INSERT per run, so a writer killed
// mid-write leaves the file as it was before that run.

#include "core/budget/budgetstore.h"

struct sqlite3;

namespace headroom {

class SqliteStore : public BudgetStore {
public:
    /// Opens or creates `path`; throws BudgetStoreError naming it when it is not an SQLite
    /// database, its schema is newer than this build's, or it cannot be written.
    explicit SqliteStore(const std::string& path);
    ~SqliteStore() override;
    SqliteStore(const SqliteStore&) = delete;
    SqliteStore& operator=(const SqliteStore&) = delete;

    bool add(const BudgetRun& run) override;
    std::vector<BudgetRun> runs() override;
    std::string name() const override { return m_path; }

private:
    void open();
    [[noreturn]] void fail(const std::string& doing) const;
    void exec(const std::string& sql);
    int schemaVersion();
    void enableWal();
    void migrate();
    bool hasColumn(const std::string& column);
    void addMissingColumns();

    std::string m_path;
    sqlite3* m_db = nullptr;
};

} // namespace headroom
