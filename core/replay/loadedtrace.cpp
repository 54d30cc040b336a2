// SPDX-License-Identifier: MIT
#include "core/replay/loadedtrace.h"

namespace headroom {

const MemoryTimeline* LoadedTrace::timelineFor(int device) const
{
    for (const auto& t : timelines)
        if (t.device == device)
            return &t;
    return nullptr;
}

} // namespace headroom
