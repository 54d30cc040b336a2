// SPDX-License-Identifier: MIT
#include "core/budget/budgetrun.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace headroom {

std::string budgetTimestampNow()
{
    // Milliseconds: the runs one `budget record` or one job's ranks write within a second
    // still sort in the order they were recorded.
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", int(ms));
    return buf;
}

} // namespace headroom
