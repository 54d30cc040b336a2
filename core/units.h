// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

/// "1.50 GiB", "512 B", "-3.00 MiB": binary units, as the tool shows sizes everywhere.
std::string formatBytes(int64_t bytes, int decimals = 2);
/// "12.3 ms", "4.56 s", "1 min 3 s".
std::string formatDurationUs(int64_t us);
/// "80GiB", "24 GB", "1.5TiB", "1073741824" -> bytes; nullopt if not a size.
std::optional<int64_t> parseByteSize(const std::string& text);

} // namespace headroom
