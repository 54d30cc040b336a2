// SPDX-License-Identifier: MIT
#include "core/units.h"

#include <cstdio>
#include <cstdlib>

namespace headroom {

std::string formatBytes(int64_t bytes, int decimals)
{
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    const bool negative = bytes < 0;
    const double mag = negative ? -static_cast<double>(bytes) : static_cast<double>(bytes);
    if (mag < 1024.0)
        return std::to_string(bytes) + " B";
    int unit = 0;
    double v = mag;
    while (v >= 1024.0 && unit < 6) {
        v /= 1024.0;
        ++unit;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%.*f %s", negative ? "-" : "", decimals, v, kUnits[unit]);
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

} // namespace headroom
