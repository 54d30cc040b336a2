// SPDX-License-Identifier: MIT
#include "core/util/libraries.h"

#include <nlohmann/json.hpp>
#include <zlib.h>
#include <zstd.h>

namespace headroom {

std::vector<LibraryInfo> coreLibraries()
{
    const std::string json = std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." + std::to_string(NLOHMANN_JSON_VERSION_MINOR)
                             + "." + std::to_string(NLOHMANN_JSON_VERSION_PATCH);
    return {
        {"nlohmann/json", json, "MIT"},
        {"Zstandard", ZSTD_versionString(), "BSD-3-Clause"},
        {"zlib", zlibVersion(), "Zlib"},
    };
}

} // namespace headroom
