// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace headroom {

/// The reader half of the .hrt format (docs/native-format.md); NativeFormat::read calls it.
/// Device columns are decompressed straight into the model's arrays; tables that the file
/// holds without repeats are taken as they are instead of being interned entry by entry.
class NativeReader {
public:
    /// Reads into `snapshot` (whose `path` is set by the caller); throws LoadError.
    static void read(const uint8_t* data, size_t size, const std::string& path, Snapshot& snapshot);
};

} // namespace headroom
