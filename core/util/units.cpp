// SPDX-License-Identifier: MIT
#include "core/util/units.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace headroom {

namespace {
std::atomic<ByteUnits> g_units{ByteUnits::Binary};
thread_local int t_override = -1; ///< a ByteUnits while a ScopedByteUnits lives; -1: none
}

void setByteUnits(ByteUnits units)
{
    g_units.store(units, std::memory_order_relaxed);
}

ByteUnits byteUnits()
{
    return t_override >= 0 ? ByteUnits(t_override) : g_units.load(std::memory_order_relaxed);
}

ScopedByteUnits::ScopedByteUnits(ByteUnits units) : m_previous(t_override)
{
    t_override = int(units);
}

ScopedByteUnits::~ScopedByteUnits()
{
    t_override = m_previous;
}

std::string formatBytes(int64_t bytes, int decimals)
{
    static constexpr const char* kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    static constexpr const char* kDecimal[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    const bool binary = byteUnits() == ByteUnits::Binary;
    const double base = binary ? 1024.0 : 1000.0;
    const bool negative = bytes < 0;
    const double mag = negative ? -static_cast<double>(bytes) : static_cast<double>(bytes);
    if (mag < base)
        return std::to_string(bytes) + " B";
    int unit = 0;
    double v = mag;
    while (v >= base && unit < 6) {
        v /= base;
        ++unit;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%.*f %s", negative ? "-" : "", decimals, v, (binary ? kBinary : kDecimal)[unit]);
    return buf;
}

std::string formatDurationUs(int64_t us)
{
    char buf[64];
    const double a = static_cast<double>(std::llabs(us));
    if (a < 1000.0)
        std::snprintf(buf, sizeof buf, "%lld us", static_cast<long long>(us));
    else if (a < 1e6)
        std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(us) / 1e3);
    else if (a < 60e6)
        std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(us) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%lld min %lld s", static_cast<long long>(us / 60000000),
                      static_cast<long long>((us / 1000000) % 60));
    return buf;
}

std::optional<int64_t> parseByteSize(const std::string& text)
{
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    if (i == 0)
        return std::nullopt;
    double value = 0;
    try {
        value = std::stod(text.substr(0, i));
    } catch (...) {
        return std::nullopt;
    }
    std::string unit;
    for (size_t k = i; k < text.size(); ++k)
        if (text[k] != ' ')
            unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[k])));
    static const std::pair<const char*, double> kUnits[] = {
        {"", 1.0}, {"b", 1.0}, {"k", 1024.0}, {"kib", 1024.0}, {"kb", 1e3}, {"m", 1048576.0},
        {"mib", 1048576.0}, {"mb", 1e6}, {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
        {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12}};
    for (const auto& [name, scale] : kUnits)
        if (unit == name) {
            const double bytes = value * scale;
            if (bytes <= 0 || bytes > 9.0e18)
                return std::nullopt;
            return static_cast<int64_t>(bytes);
        }
    return std::nullopt;
}

std::string formatPercent(double fraction, int decimals)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f%%", decimals, fraction * 100.0);
    return buf;
}

std::string formatTimes(double ratio)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2fx", ratio);
    return buf;
}

} // namespace headroom
