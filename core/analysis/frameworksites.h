// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/frametable.h"

#include <string_view>
#include <unordered_map>

namespace headroom {

/// Memory a training framework allocates for itself, told by the code that allocates it
/// (docs/categories-and-phases.md, "Frameworks' own memory", says what each site was written
/// from and checked on).
enum class FrameworkSite : uint8_t {
    None,
    /// DistributedDataParallel's Reducer: its flat gradient buckets, built in the constructor
    /// (`_ddp_init_helper`) and rebuilt in the forward that follows the first backward.
    DdpReducer,
    /// DistributedDataParallel's constructor otherwise: the broadcast of the module's state from
    /// rank 0 and the shape check across ranks, both transient (DDP wraps parameters that exist).
    DdpConstruction,
    /// torch.distributed.optim.ZeroRedundancyOptimizer: the optimizer step of a ZeRO stage-1 run.
    ZeroRedundancyOptimizer,
};

std::string_view frameworkSiteName(FrameworkSite s);

/// The site of one stack, each stack looked at once (a trace repeats a few thousand stacks).
class FrameworkSites {
public:
    explicit FrameworkSites(const FrameTable& frames) : m_frames(frames) {}
    FrameworkSite of(uint32_t stack);

private:
    FrameworkSite classify(uint32_t stack) const;
    const FrameTable& m_frames;
    std::unordered_map<uint32_t, FrameworkSite> m_seen;
};

} // namespace headroom
