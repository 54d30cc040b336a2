// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/finding.h"
#include "core/analysis/prerecording.h"

#include <optional>

namespace headroom {

/// The diagnosis's word on memory from before the recording (kind "before_recording"): what it
/// was read as and from what, or the readings it allows and what would settle them.
std::optional<Finding> preRecordingFinding(const PreRecording& r);

} // namespace headroom
