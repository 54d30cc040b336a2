// SPDX-License-Identifier: MIT
#pragma once

// User-defined categories (docs/categories-and-phases.md, "Your own categories"): a rules
// file names groups of allocations by regular expressions over their stacks' frames and their
// `user_metadata`, as Mosaic lets its users do. The fixed categories stay as they are: a rule
// adds a second grouping ("attention", "kv cache", "my data loader") beside them.

#include "core/model/frametable.h"

#include <cstdint>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headroom {

/// A rules file that cannot be used: the message names the file, the rule and what is wrong.
class UserCategoriesError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct UserCategoryRule {
    std::string name;
    std::string color; ///< "#rrggbb"; empty: the frontend picks one
    /// The expressions as written (empty: not part of the rule). The function and file ones
    /// must match the same frame; the metadata one the allocation's user_metadata.
    std::string function, file, metadata;
    std::regex functionRe, fileRe, metadataRe;
};

class UserCategories {
public:
    /// `{"categories": [{"name", "function", "file", "metadata", "color"}, ...]}` (or the bare
    /// array). `source` names the text in errors. Throws UserCategoriesError.
    static UserCategories parse(std::string_view text, const std::string& source);
    /// Reads and parses `path`. Throws UserCategoriesError.
    static UserCategories load(const std::string& path);

    const std::vector<UserCategoryRule>& rules() const { return m_rules; }
    const std::string& source() const { return m_source; }
    bool empty() const { return m_rules.empty(); }
    /// Whether some rule reads `user_metadata` (a caller may skip looking it up otherwise).
    bool readsMetadata() const { return m_anyMetadata; }

    /// Per stack, whether each rule's frame part matches it: a trace has far fewer stacks than
    /// allocations. Stack ids mean nothing in another file's frame table, so one cache serves
    /// one frame table (compare reads two files with the same rules).
    using StackMatches = std::unordered_map<uint32_t, std::vector<bool>>;

    /// The first rule that matches an allocation of `stack` with `metadata` (empty: none
    /// recorded); -1 when none does. `cache` belongs to `frames`.
    int match(const FrameTable& frames, uint32_t stack, std::string_view metadata, StackMatches& cache) const;

private:
    bool matchesFrames(const UserCategoryRule& r, const FrameTable& frames, uint32_t stack) const;

    std::vector<UserCategoryRule> m_rules;
    std::string m_source;
    bool m_anyMetadata = false;
};

} // namespace headroom
