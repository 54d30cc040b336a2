// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <nlohmann/json.hpp>

namespace headroom {

/// Turns a JSON rendition of a snapshot dict (docs/formats.md, "JSON inputs": what `MemoryViz.js` accepts
/// via `JSON.parse`, or `json.dump` of `_snapshot()`) into the same model the pickle
/// importer produces, so every view and the summary behave identically. Also accepts a
/// bare list of segments, and the `category` field `_profile_to_snapshot` writes on trace
/// entries. Errors name the JSON path, e.g. `device_traces[0][5].size`.
class JsonSnapshotImporter {
public:
    /// True when `root` looks like a snapshot (an object with `segments` or `device_traces`).
    static bool accepts(const nlohmann::json& root);
    static void import(const nlohmann::json& root, Snapshot& snapshot);
};

} // namespace headroom
