// SPDX-License-Identifier: MIT
#pragma once

// The one door to a budget store: the URL or path decides the backend.

#include "core/budget/budgetstore.h"

#include <memory>
#include <string>

namespace headroom {

/// Opens (creating or migrating where needed) the store `where` names: a `postgresql://` or
/// `postgres://` URL (libpq's own; PGPASSWORD and ~/.pgpass serve as well), else an SQLite file.
std::unique_ptr<BudgetStore> openBudgetStore(const std::string& where);

} // namespace headroom
