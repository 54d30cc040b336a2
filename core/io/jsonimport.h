// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <string>
#include <string_view>

namespace headroom {

/// Parses JSON input and picks the importer by content (docs/formats.md, "JSON inputs"): an object with
/// `traceEvents` = Chrome trace, with `segments`/`device_traces` = snapshot rendition, a list
/// of 4-int rows = raw profiler timeline, `[times[], sizes[][]]` = profiler timeline, a bare
/// list of segment dicts = legacy snapshot. Throws LoadError with the byte offset of a
/// syntax error or the JSON path of a type error.
class JsonImport {
public:
    static void import(std::string_view text, const std::string& path, Snapshot& snapshot);
};

} // namespace headroom
