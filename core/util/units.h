// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

/// How sizes are written: binary (KiB = 1024 B, the default, as PyTorch and nvidia-smi
/// count) or decimal SI units (kB = 1000 B). A process-wide choice: the GUI sets it from
/// its preferences; the CLI and the tests keep the binary default.
enum class ByteUnits { Binary, Decimal };
void setByteUnits(ByteUnits units);
/// This thread's units: a ScopedByteUnits' while one lives, else the process-wide choice.
ByteUnits byteUnits();

/// Gives this thread its own units while it lives. Work started in the background gets the
/// units in force when it was started (the GUI's BackgroundJob installs one), so a diagnosis
/// computed while the user changes the preference is written in one unit throughout and no
/// worker reads the setting the GUI thread writes.
class ScopedByteUnits {
public:
    explicit ScopedByteUnits(ByteUnits units);
    ~ScopedByteUnits();
    ScopedByteUnits(const ScopedByteUnits&) = delete;
    ScopedByteUnits& operator=(const ScopedByteUnits&) = delete;

private:
    int m_previous; ///< the override it replaced; -1: none
};

/// "1.50 GiB", "512 B", "-3.00 MiB" (or "1.61 GB" with decimal units).
std::string formatBytes(int64_t bytes, int decimals = 2);
/// A fraction as a percentage: 0.085 -> "8.5%" (`decimals` after the point).
std::string formatPercent(double fraction, int decimals = 1);
/// A ratio as a multiple: 2.17 -> "2.17x".
std::string formatTimes(double ratio);
/// "12.3 ms", "4.56 s", "1 min 3 s".
std::string formatDurationUs(int64_t us);
/// "80GiB", "24 GB", "1.5TiB", "1073741824" -> bytes; nullopt if not a size.
std::optional<int64_t> parseByteSize(const std::string& text);

} // namespace headroom
