// SPDX-License-Identifier: MIT
#pragma once

// Text for a terminal: every line of headroom-cli's text output fits 100 columns, and C++
// frames print without their argument lists (which alone can run to 200 characters).

#include <string>
#include <string_view>

namespace headroom {

inline constexpr size_t kTerminalColumns = 100;

/// Breaks every line of `text` longer than `width` at spaces; a continuation keeps the
/// line's indentation plus four spaces. A word longer than the room is cut.
std::string wrapLines(std::string_view text, size_t width = kTerminalColumns);

/// "??:0:torch::autograd::generated::BmmBackward0::apply(std::vector<...>&&)" ->
/// "torch::autograd::generated::BmmBackward0::apply(...)"; a Python frame of an installed
/// package loses the path up to site-packages/ ("torch/optim/optimizer.py:493:wrapper").
std::string compactFrame(std::string_view frame);

} // namespace headroom
