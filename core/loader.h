// SPDX-License-Identifier: MIT
#pragma once

#include "core/picklereader.h"
#include "core/replay.h"
#include "core/snapshotmodel.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

/// A loaded file: the snapshot and each device's replayed timeline (same order as
/// `snapshot.devices`). Immutable and shared between threads once built.
struct LoadedTrace {
    Snapshot snapshot;
    std::vector<MemoryTimeline> timelines;
    uint64_t fileBytes = 0;

    const MemoryTimeline* timelineFor(int device) const;
};

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
