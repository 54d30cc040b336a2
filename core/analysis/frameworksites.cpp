// SPDX-License-Identifier: MIT
#include "core/analysis/frameworksites.h"

namespace headroom {

namespace {

constexpr std::string_view kDdpFile = "torch/nn/parallel/distributed.py";
constexpr std::string_view kZeroFile = "torch/distributed/optim/zero_redundancy_optimizer.py";

bool endsWith(std::string_view s, std::string_view tail)
{
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

/// The functions of DDP's file that call into the Reducer with no Python frame between: the
/// constructor's helper builds the buckets, the forward (`_pre_forward` from PyTorch 2.0)
/// rebuilds them once, in the order the first backward produced the gradients.
bool isReducerCaller(std::string_view name)
{
    return name == "_ddp_init_helper" || name == "forward" || name == "_pre_forward";
}

} // namespace

std::string_view frameworkSiteName(FrameworkSite s)
{
    switch (s) {
    case FrameworkSite::None: return "none";
    case FrameworkSite::DdpReducer: return "DistributedDataParallel's Reducer";
    case FrameworkSite::DdpConstruction: return "DistributedDataParallel's constructor";
    case FrameworkSite::ZeroRedundancyOptimizer: return "ZeroRedundancyOptimizer";
    }
    return "?";
}

FrameworkSite FrameworkSites::of(uint32_t stack)
{
    auto [it, added] = m_seen.try_emplace(stack, FrameworkSite::None);
    if (added)
        it->second = classify(stack);
    return it->second;
}

FrameworkSite FrameworkSites::classify(uint32_t stack) const
{
    bool innermostPython = true;
    for (uint32_t f : m_frames.stack(stack)) {
        const Frame& fr = m_frames.frame(f);
        const std::string_view file = m_frames.strings().get(fr.file);
        if (!endsWith(file, ".py"))
            continue; // a C++ frame (stacks='all'): the Reducer's own
        const std::string_view name = m_frames.strings().get(fr.name);
        if (endsWith(file, kDdpFile)) {
            if (innermostPython && isReducerCaller(name))
                return FrameworkSite::DdpReducer;
            if (name == "__init__")
                return FrameworkSite::DdpConstruction;
        }
        if (endsWith(file, kZeroFile))
            return FrameworkSite::ZeroRedundancyOptimizer;
        innermostPython = false;
    }
    return FrameworkSite::None;
}

} // namespace headroom
