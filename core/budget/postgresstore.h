// SPDX-License-Identifier: MIT
#pragma once

// The budget store in a PostgreSQL database (docs/budget.md), a team's shared store named by
// a postgresql:// URL: every job on every machine records into one place. Each run is one
// INSERT in its own transaction; migrations hold an advisory lock, so jobs that open a new
// database at once create its tables once.

#include "core/budget/budgetstore.h"

struct pg_conn;

namespace headroom {

class PostgresStore : public BudgetStore {
public:
    /// Connects to `url`; throws BudgetStoreError naming it (without its password) when it
    /// cannot, or when its schema is newer than this build's.
    explicit PostgresStore(const std::string& url);
    ~PostgresStore() override;
    PostgresStore(const PostgresStore&) = delete;
    PostgresStore& operator=(const PostgresStore&) = delete;

    bool add(const BudgetRun& run) override;
    std::vector<BudgetRun> runs() override;
    std::string name() const override { return m_name; }

private:
    void connect(const std::string& url);
    [[noreturn]] void fail(const std::string& doing) const;
    void exec(const std::string& sql);
    int schemaVersion();
    void migrate();
    void addMissingColumns();

    std::string m_name;
    pg_conn* m_conn = nullptr;
};

} // namespace headroom
