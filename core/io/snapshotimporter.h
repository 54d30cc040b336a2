// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/pickledocument.h"
#include "core/model/snapshotmodel.h"

#include <memory>
#include <string>

namespace headroom {

/// Turns a parsed snapshot pickle (every schema era of docs/formats.md, every key
/// optional) into the Snapshot model. Type errors name the path inside the document,
/// e.g. `segments[3].blocks[0].size: expected an integer, found str`.
class SnapshotImporter {
public:
    /// `snapshot.frames` must be the FrameTable the document was parsed with.
    static void import(PickleDocument& doc, Snapshot& snapshot);
};

} // namespace headroom
