// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/picklereader.h"
#include "core/model/snapshotmodel.h"
#include "core/replay/loadedtrace.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

struct LoadOptions {
    ProgressFn progress; ///< 0..total over the whole load
    const std::atomic<bool>* cancel = nullptr;
    uint64_t maxInflated = 16ull << 30;
};

/// Detects the format by content (not by extension) and loads it. Throws LoadError
/// for bad input and LoadCancelled when `options.cancel` was set.
class Loader {
public:
    using Options = LoadOptions;

    static std::shared_ptr<const LoadedTrace> load(const std::string& path, const Options& options = {});
    /// Same, from bytes already in memory (tests, fuzzing).
    static std::shared_ptr<const LoadedTrace> loadBytes(const std::string& name, std::vector<uint8_t> bytes,
                                                        const Options& options = {});
};

} // namespace headroom
