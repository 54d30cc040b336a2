// SPDX-License-Identifier: MIT
#pragma once

// Small wordings several subcommands print alike: a signed size, a signed percentage, and the
// keys of a category or phase by index (the JSON's and the text's).

#include <cstddef>
#include <cstdint>
#include <string>

namespace headroom::cli {

/// "+12.00 MiB", "-3.00 MiB".
std::string signedBytes(int64_t delta);
/// "+4.2%" for 0.042.
std::string signedPercent(double fraction);
/// "activation": the category's key at index `i` of the per-category arrays.
std::string categoryKeyAt(size_t i);
/// "forward": the phase's key at index `i` of the per-phase arrays.
std::string phaseKeyAt(size_t i);

} // namespace headroom::cli
