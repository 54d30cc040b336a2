// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Headroom's own trace format (`.hrt`, docs/native-format.md): a fixed header with a
/// version, then self-describing sections (zstd-compressed or stored), each device's
/// events as columns. Readers skip unknown sections unless they are marked critical;
/// a major version they do not know is a clear error.
class NativeFormat {
public:
    static constexpr uint16_t kMajor = 1;
    static constexpr uint16_t kMinor = 0;
    static constexpr uint8_t kMagic[8] = {0x89, 'H', 'R', 'T', '\r', '\n', 0x1a, '\n'};

    struct WriteOptions {
        bool compress = true;
        int zstdLevel = 3;
        /// Replaces the snapshot's own user data (the GUI's notes, bookmarks, what-if
        /// settings) without copying the snapshot.
        std::optional<std::string> userData;
    };

    static bool isNative(const uint8_t* data, size_t size);
    /// Serialises the model (not the replayed timelines: they are recomputed on load).
    static std::vector<uint8_t> encode(const Snapshot& snapshot, const WriteOptions& options);
    static std::vector<uint8_t> encode(const Snapshot& snapshot) { return encode(snapshot, WriteOptions{}); }
    /// encode() + AtomicFile::write(); throws SaveError.
    static void write(const Snapshot& snapshot, const std::string& path, const WriteOptions& options);
    static void write(const Snapshot& snapshot, const std::string& path) { write(snapshot, path, WriteOptions{}); }
    /// Reads into `snapshot` (whose `path` is set by the caller); throws LoadError.
    static void read(const uint8_t* data, size_t size, const std::string& path, Snapshot& snapshot);
};

} // namespace headroom
