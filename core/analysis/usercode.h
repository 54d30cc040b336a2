// SPDX-License-Identifier: MIT
#pragma once

// "Allocated by": the innermost frame of the user's own code. A stack's innermost Python frame
// is usually a library's (torch/nn/functional.py:1701:relu, einops); what the engineer will
// edit is further out. The user's code is a Python file outside site-packages, dist-packages
// and the interpreter's standard library.

#include "core/model/frametable.h"

#include <cstdint>
#include <string_view>

namespace headroom {

/// A Python file of an installed package or of the standard library (not the user's).
bool isLibraryFile(std::string_view file);

/// The innermost Python frame of the user's code in `stack`; else its innermost Python frame;
/// else its most telling frame (FrameTable::topFrames); kNoFrame for a stack without frames.
uint32_t userCodeFrame(const FrameTable& frames, uint32_t stack);

inline constexpr uint32_t kNoFrame = UINT32_MAX;

} // namespace headroom
