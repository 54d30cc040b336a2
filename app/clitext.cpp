// SPDX-License-Identifier: MIT
#include "app/clitext.h"

#include "core/analysis/phase.h"
#include "core/model/tensorcategory.h"
#include "core/util/units.h"

#include <cstdio>
#include <cstdlib>

namespace headroom::cli {

std::string signedBytes(int64_t delta)
{
    return (delta >= 0 ? "+" : "-") + formatBytes(std::llabs(delta));
}

std::string signedPercent(double fraction)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100.0);
    return buf;
}

std::string categoryKeyAt(size_t i) { return categoryLowerName(static_cast<TensorCategory>(i)); }

std::string phaseKeyAt(size_t i) { return std::string(phaseKey(static_cast<Phase>(i))); }

} // namespace headroom::cli
