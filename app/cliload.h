// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/loader.h"
#include "core/util/loaderror.h"

#include <iostream>
#include <memory>
#include <string>

namespace headroom::cli {

/// Loads `path` for a subcommand. On bad input prints headroom-cli's one line (the loader's
/// message names the file, the byte offset and what was expected) and returns null: the
/// caller exits 2.
inline std::shared_ptr<const LoadedTrace> loadOrReport(const std::string& path)
{
    try {
        return Loader::load(path);
    } catch (const LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
    } catch (const std::bad_alloc&) {
        std::cerr << "headroom-cli: " << path << ": out of memory while loading\n";
    }
    return nullptr;
}

} // namespace headroom::cli
