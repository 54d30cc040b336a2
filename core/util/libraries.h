// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

namespace headroom {

/// A third-party library linked into core/, for Help ▸ About and --version.
struct LibraryInfo {
    std::string name;
    std::string version; ///< the one running (or compiled in, for header-only libraries)
    std::string licence; ///< SPDX identifier
};

std::vector<LibraryInfo> coreLibraries();

} // namespace headroom
