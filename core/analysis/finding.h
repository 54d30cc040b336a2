// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace headroom {

/// One diagnosis: what kind of problem, the verdict, the evidence in numbers, and the
/// first move to try. Its own header so that each finding's maker (prerecordingfinding.h, ...)
/// needs nothing of the diagnosis that gathers them.
struct Finding {
    std::string kind; ///< capacity, leak, fragmentation, outlier_batch, oom
    std::string verdict;
    std::string evidence;
    std::string firstMove;
};

} // namespace headroom
