// SPDX-License-Identifier: MIT
#pragma once

// Where the standing budget keeps its runs (docs/budget.md): an SQLite file by default, a
// PostgreSQL database for a team (a postgresql:// URL). One schema, versioned: a store whose
// schema is newer than this build knows is refused and left as it is. Only bound parameters
// reach SQL, and a URL's password is never part of a message.

#include "core/budget/budgetrun.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace headroom {

/// The schema this build writes and reads (the migrations in budgetschema.cpp lead to it).
inline constexpr int kBudgetSchemaVersion = 1;

/// A store that cannot be opened, read or written, worded for the user; names the store
/// (with any password hidden).
struct BudgetStoreError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class BudgetStore {
public:
    virtual ~BudgetStore() = default;
    /// Adds `run` unless a run with its id is there; true when it was added.
    virtual bool add(const BudgetRun& run) = 0;
    /// Every run, oldest first (by recordedAt, then id).
    virtual std::vector<BudgetRun> runs() = 0;
    /// The store as a message may name it: the file, or the URL without its password.
    virtual std::string name() const = 0;
};

/// Whether `where` names a PostgreSQL database (postgresql:// or postgres://).
bool isPostgresUrl(const std::string& where);

/// `url` with the password after "user:" hidden ("postgresql://ci:***@db/budget"), and any
/// `password=` parameter.
std::string redactStoreUrl(const std::string& url);

} // namespace headroom
