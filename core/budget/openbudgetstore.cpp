// SPDX-License-Identifier: MIT
#include "core/budget/openbudgetstore.h"

#include "core/budget/postgresstore.h"
#include "core/budget/sqlitestore.h"

namespace headroom {

std::unique_ptr<BudgetStore> openBudgetStore(const std::string& where)
{
    if (where.empty())
        throw BudgetStoreError("no budget store given (expected an SQLite file or a postgresql:// URL)");
    if (isPostgresUrl(where))
        return std::make_unique<PostgresStore>(where);
    return std::make_unique<SqliteStore>(where);
}

} // namespace headroom
