// SPDX-License-Identifier: MIT
#include "core/analysis/frameworksites.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace headroom;

namespace {

struct F {
    const char* file;
    const char* name;
};

uint32_t stackOf(FrameTable& ft, std::initializer_list<F> frames)
{
    std::vector<uint32_t> ids;
    for (const F& f : frames)
        ids.push_back(ft.internFrame(f.file, 1, f.name));
    return ft.internStack(ids);
}

constexpr const char* kDdp = "/usr/lib/python3/dist-packages/torch/nn/parallel/distributed.py";

} // namespace

TEST_CASE("DDP's and ZeRO's own allocations are told by the code that makes them", "[analysis][frameworks]")
{
    // The stacks of a CPU recording of DDP over gloo with torch 1.13 (python/distributed_styles.py).
    FrameTable ft;
    FrameworkSites sites(ft);
    const uint32_t bucket = stackOf(ft, {{kDdp, "_ddp_init_helper"}, {kDdp, "__init__"}, {"train.py", "main"}});
    const uint32_t rebuilt = stackOf(ft, {{kDdp, "forward"}, {"torch/nn/modules/module.py", "_call_impl"}, {"train.py", "main"}});
    const uint32_t rebuilt2 = stackOf(ft, {{"??", "c10d::Reducer::rebuild_buckets()"}, {kDdp, "_pre_forward"}, {"train.py", "main"}});
    const uint32_t broadcast = stackOf(ft, {{"torch/distributed/utils.py", "_sync_params_and_buffers"},
                                            {"torch/distributed/utils.py", "_sync_module_states"},
                                            {kDdp, "__init__"}, {"train.py", "main"}});
    // The model's own forward under DDP's: the model's activations, not DDP's.
    const uint32_t model = stackOf(ft, {{"torch/nn/functional.py", "linear"}, {"model.py", "forward"},
                                        {"torch/nn/modules/module.py", "_call_impl"}, {kDdp, "_run_ddp_forward"},
                                        {kDdp, "forward"}, {"train.py", "main"}});
    const uint32_t zero = stackOf(ft, {{"torch/optim/adamw.py", "step"},
                                       {"torch/distributed/optim/zero_redundancy_optimizer.py", "step"},
                                       {"train.py", "main"}});
    const uint32_t plain = stackOf(ft, {{"model.py", "__init__"}, {"train.py", "main"}});
    CHECK(sites.of(bucket) == FrameworkSite::DdpReducer);
    CHECK(sites.of(rebuilt) == FrameworkSite::DdpReducer);
    CHECK(sites.of(rebuilt2) == FrameworkSite::DdpReducer);
    CHECK(sites.of(broadcast) == FrameworkSite::DdpConstruction);
    CHECK(sites.of(model) == FrameworkSite::None);
    CHECK(sites.of(zero) == FrameworkSite::ZeroRedundancyOptimizer);
    CHECK(sites.of(plain) == FrameworkSite::None);
    CHECK(sites.of(FrameTable::kEmptyStack) == FrameworkSite::None);
    CHECK(frameworkSiteName(FrameworkSite::DdpReducer) == "DistributedDataParallel's Reducer");
}
