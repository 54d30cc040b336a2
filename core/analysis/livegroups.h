// SPDX-License-Identifier: MIT
#pragma once

// What is alive at one moment, grouped by the code that allocated it: "96 x 100 MiB =
// 9.4 GiB of gradients from BmmBackward0::apply" instead of 96 identical rows. Used by
// `headroom-cli analyze`, the MCP server's `peak` and the postmortem's table.

#include "core/analysis/usercategories.h"
#include "core/analysis/memoryanalysis.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// Allocations alive at the moment with the same site, category and size.
struct LiveGroup {
    /// The most telling frames of the first allocation of the group, innermost first
    /// (FrameTable::topFrames: Python frames when the stack has any); empty without frames.
    std::vector<std::string> frames;
    /// The innermost frame of the user's own code (core/analysis/usercode): what "allocated by"
    /// names; a library's or C++ frame only when the stack has no user code.
    std::string userCode;
    TensorCategory category = TensorCategory::Unknown;
    Phase phase = Phase::Other; ///< the phase most of the bytes were born in
    int64_t size = 0;           ///< of each
    int64_t count = 0, bytes = 0;
    std::string site() const { return frames.empty() ? std::string() : frames.front(); }
};

/// Allocations alive at the moment made under the same nn.Module forward. Most exact first:
/// the qualified module name a Headroom recorder wrote on the allocation (`headroom_tensor`);
/// else the innermost frame that Module._call_impl called (its file, line and name), which is
/// what a plain snapshot's stacks tell.
struct ModuleGroup {
    std::string name;    ///< "blocks.3.attn" from the recorder; empty: named by its forward frame
    std::string forward; ///< "model.py:88:forward"; empty for a recorded name without module frames
    std::string key;     ///< ModuleOf::key(): what a module filter names (core/analysis/moduleof.h)
    std::string source;  ///< moduleSourceKey(): "recorded", "user_metadata" or "stack"
    int64_t count = 0, bytes = 0;
    std::array<int64_t, kTensorCategoryCount> byCategory{};
};

/// Allocations alive at the moment that one user-defined category rule claims
/// (core/analysis/usercategories.h): the first rule that matches wins.
struct UserCategoryGroup {
    std::string name, color;
    int64_t count = 0, bytes = 0;
    std::array<int64_t, kTensorCategoryCount> byCategory{};
};

/// What each of the user's rules claims among the allocations alive at one moment, and what
/// none does: the groups add up to `bytes`, everything alive.
struct UserCategoryTotals {
    std::vector<UserCategoryGroup> groups; ///< one per rule, in the file's order
    int64_t unclaimedBytes = 0, unclaimedCount = 0;
    int64_t bytes = 0;
};

/// The user's categories alone at `event`, without the stack and module grouping LiveGroups
/// makes: what the Breakdown redraws on every click, compare and check read at each peak.
UserCategoryTotals userCategoriesAt(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis,
                                    int64_t event, const UserCategories& rules);

struct LiveGroups {
    int64_t event = -1;
    int64_t bytes = 0, count = 0; ///< everything alive
    Breakdown breakdown;
    std::vector<LiveGroup> byStack;    ///< largest first, at most `top`
    size_t stackGroups = 0;            ///< before truncation
    std::vector<ModuleGroup> byModule; ///< largest first, at most `top`; empty without module frames
    int64_t moduleBytes = 0;           ///< alive under some module's forward
    int64_t recordedModuleBytes = 0;   ///< of which named by a recorder
    int64_t metadataModuleBytes = 0;   ///< of which named by user_metadata (no recorder name)
    /// One per rule of the categories file, in its order (empty without one); what no rule
    /// claims is `unclaimedBytes`.
    std::vector<UserCategoryGroup> byUserCategory;
    int64_t unclaimedBytes = 0, unclaimedCount = 0;

    /// `event` -1 is before the first event, as everywhere. `frameCount`: frames kept per group.
    /// `rules`: the user's categories file, for byUserCategory.
    static LiveGroups at(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& analysis, int64_t event,
                         size_t top, size_t frameCount = 3, const UserCategories* rules = nullptr);
};

} // namespace headroom
