// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

namespace headroom {

/// Where the user's category rules are remembered (QSettings): a default for every file, and
/// rules of a file's own that take its place when that file is open. A file is known by its
/// absolute path.
class UserCategoryStore {
public:
    /// The file's own rules where it has them, else the default ("" without either).
    static QString rulesFor(const QString& path);
    static bool hasFileRules(const QString& path);
    /// `forFileOnly`: the rules become `path`'s own and the default stays; else they become
    /// the default and `path` forgets rules of its own.
    static void save(const QString& path, const QString& rules, bool forFileOnly);

private:
    static QString fileKey(const QString& path);
};

} // namespace headroom
