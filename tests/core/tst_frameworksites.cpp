// SPDX-License-Identifier: MIT
#include "core/analysis/frameworksites.h"
#include "core/analysis/livegroups.h"
#include "core/analysis/moduleof.h"
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/calibration/traceconfig.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
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

/// Each rule's allocations on device 0, by size in the order they were made.
std::map<CategoryRule, std::vector<int64_t>> sizesByRule(const LoadedTrace& trace, const DeviceAnalysis& a)
{
    const MemoryTimeline& tl = trace.timelines[0];
    std::map<CategoryRule, std::vector<int64_t>> byRule;
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        byRule[a.classes[i].rule].push_back(tl.allocations[i].size);
    return byRule;
}

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

TEST_CASE("Inference engines' KV caches and Megatron's and DeepSpeed's buffers are told by their public frames",
          "[analysis][frameworks]")
{
    // File paths and function names from the frameworks' public sources (frameworksites.cpp).
    FrameTable ft;
    FrameworkSites sites(ft);
    const std::string site = "/usr/local/lib/python3.10/dist-packages/";
    auto one = [&](const std::string& file, const char* name) {
        const std::string path = site + file;
        return stackOf(ft, {{"??", "at::native::zeros(...)"}, {path.c_str(), name}, {"train.py", "main"}});
    };
    CHECK(sites.of(one("vllm/worker/cache_engine.py", "_allocate_kv_cache")) == FrameworkSite::VllmKvCache);
    CHECK(sites.of(one("vllm/v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors")) == FrameworkSite::VllmKvCache);
    CHECK(sites.of(one("vllm/v1/worker/gpu_model_runner.py", "execute_model")) == FrameworkSite::None);
    // SGLang allocates in list comprehensions: "<listcomp>" is the innermost frame up to Python 3.11.
    CHECK(sites.of(one("sglang/srt/mem_cache/memory_pool.py", "<listcomp>")) == FrameworkSite::SglangKvCache);
    CHECK(sites.of(one("megatron/core/distributed/param_and_grad_buffer.py", "__init__")) ==
          FrameworkSite::MegatronParamAndGradBuffer);
    CHECK(sites.of(one("megatron/core/optimizer/distrib_optimizer.py", "_build_model_and_main_param_groups")) ==
          FrameworkSite::MegatronMainParams);
    CHECK(sites.of(one("deepspeed/runtime/zero/stage_1_and_2.py", "__init__")) == FrameworkSite::DeepSpeedZeroInit);
    CHECK(sites.of(one("deepspeed/runtime/zero/stage3.py", "_create_fp32_partitions")) ==
          FrameworkSite::DeepSpeedMasterPartition);
    CHECK(sites.of(one("deepspeed/runtime/zero/partition_parameters.py", "all_gather_coalesced")) ==
          FrameworkSite::DeepSpeedGather);
    // Only the innermost Python frame is the framework's allocation: the model's forward run by
    // vLLM's runner allocates the model's tensors, not the cache.
    const std::string runner = site + "vllm/v1/worker/gpu_model_runner.py";
    const uint32_t model = stackOf(ft, {{"model.py", "forward"}, {runner.c_str(), "_allocate_kv_cache_tensors"}});
    CHECK(sites.of(model) == FrameworkSite::None);
}

TEST_CASE("An inference engine's model loader on the stack makes its weights, whatever is inside it",
          "[analysis][frameworks]")
{
    // vLLM's and SGLang's public sources: the loader's frame is the outermost of the engine's, with
    // the model's constructor, a layer's create_weights and torch's DeviceContext inside it.
    FrameTable ft;
    FrameworkSites sites(ft);
    const std::string site = "/usr/local/lib/python3.12/dist-packages/";
    const std::string device = site + "torch/utils/_device.py", linear = site + "vllm/model_executor/layers/linear.py";
    const std::string v1 = site + "vllm/model_executor/model_loader/base_loader.py";
    const std::string v1utils = site + "vllm/model_executor/model_loader/utils.py";
    const std::string sglang = site + "sglang/srt/model_loader/loader.py";
    const std::string runner = site + "vllm/v1/worker/gpu_model_runner.py";
    const uint32_t vllmWeight = stackOf(ft, {{device.c_str(), "__torch_function__"}, {linear.c_str(), "create_weights"},
                                             {linear.c_str(), "__init__"}, {v1utils.c_str(), "initialize_model"},
                                             {v1.c_str(), "load_model"}, {runner.c_str(), "load_model"}});
    const uint32_t sglangWeight = stackOf(ft, {{"qwen2.py", "__init__"}, {sglang.c_str(), "load_model"}});
    CHECK(sites.of(vllmWeight) == FrameworkSite::EngineModelLoad);
    CHECK(sites.of(sglangWeight) == FrameworkSite::EngineModelLoad);
    // The engine's runner without its loader (a forward, the KV cache) is not the model's load.
    const uint32_t forward = stackOf(ft, {{"llama.py", "forward"}, {runner.c_str(), "execute_model"}});
    CHECK(sites.of(forward) == FrameworkSite::None);
    CHECK(frameworkSiteName(FrameworkSite::EngineModelLoad) == "an inference engine's model loader");
}

TEST_CASE("A colocated RL job's KV cache and Megatron buffers read as what they are", "[analysis][frameworks]")
{
    // tests/tools/make_framework_fixture.py: the frames of vLLM's and Megatron-core's sources.
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/colocated_rl.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    std::map<CategoryRule, std::vector<int64_t>> byRule = sizesByRule(*trace, a);
    const int64_t MiB = 1 << 20;
    CHECK(byRule[CategoryRule::EngineKvCache] == std::vector<int64_t>(6, 4 * MiB));
    CHECK(byRule[CategoryRule::FlatParameterBuffer] == std::vector<int64_t>{8 * MiB});  // param_data
    CHECK(byRule[CategoryRule::FlatGradientBuffer] == std::vector<int64_t>{16 * MiB}); // grad_data
    CHECK(byRule[CategoryRule::MasterWeights] == std::vector<int64_t>{16 * MiB});      // the fp32 copy
    // The loader's staging copy, then Megatron's 16-bit clone: freed where they were made.
    CHECK(byRule[CategoryRule::FrameworkTemporary] == std::vector<int64_t>{2 * MiB, 8 * MiB});
    CHECK(byRule[CategoryRule::EngineModelLoad] == std::vector<int64_t>(3, 2 * MiB));   // vLLM's weights
    CHECK(a.atPeak.byCategory[size_t(TensorCategory::KvCache)] == 24 * MiB);
    CHECK(a.atPeak.byCategory[size_t(TensorCategory::EngineWeights)] == 6 * MiB);
    CHECK(categoryFromName("engine_weights") == TensorCategory::EngineWeights);
    CHECK(std::string(categoryLowerName(TensorCategory::KvCache)) == "kv_cache");
    CHECK(categoryFromName("KV_CACHE") == TensorCategory::KvCache);
    // The sharding read from the same sites: Megatron's DistributedOptimizer is ZeRO-1's layout.
    std::vector<MeasuredItem> how;
    CHECK(readTraceConfig(*trace, 0, &how).zero == 1);
    bool said = false;
    for (const MeasuredItem& m : how)
        said = said || (m.key == "zero" && m.how == "read" && m.detail.find("DistributedOptimizer") != std::string::npos);
    CHECK(said);
}

TEST_CASE("DeepSpeed ZeRO-1 is read from its engine's gradient reduction after the backward", "[analysis][frameworks]")
{
    // engine.py's allreduce_gradients calls stage_1_and_2.py's reduce_gradients at stage 1 only
    // (DeepSpeed v0.9.5 to edaa7221); stages 2 and 3 reduce in the backward's hooks. The frames:
    // tests/tools/make_framework_fixture.py.
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/deepspeed_zero1.pickle");
    std::vector<MeasuredItem> how;
    CHECK(readTraceConfig(*trace, 0, &how).zero == 1);
    bool said = false;
    for (const MeasuredItem& m : how)
        said = said || (m.key == "zero" && m.how == "read" && m.detail.find("allreduce_gradients") != std::string::npos);
    CHECK(said);

    // reduce_gradients reached any other way says nothing: ZenFlow's optimizer (stage 1 or 2) or
    // a caller that is not the engine's allreduce_gradients.
    FrameTable ft;
    FrameworkSites sites(ft);
    const std::string site = "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/";
    const std::string zero12 = site + "zero/stage_1_and_2.py", engine = site + "engine.py";
    const std::string zenflow = site + "zenflow/zenflow_stage_1_and_2.py";
    const uint32_t stage1 = stackOf(ft, {{zero12.c_str(), "reduce_ready_partitions_and_remove_grads"},
                                         {zero12.c_str(), "reduce_gradients"}, {engine.c_str(), "allreduce_gradients"},
                                         {engine.c_str(), "backward"}, {"train.py", "main"}});
    const uint32_t viaZenflow = stackOf(ft, {{zenflow.c_str(), "reduce_ipg_grads"}, {zero12.c_str(), "reduce_gradients"},
                                             {engine.c_str(), "allreduce_gradients"}, {"train.py", "main"}});
    const uint32_t otherCaller = stackOf(ft, {{zero12.c_str(), "reduce_gradients"}, {"train.py", "main"}});
    CHECK(sites.deepSpeedStage1Reduction(stage1));
    CHECK_FALSE(sites.deepSpeedStage1Reduction(viaZenflow));
    CHECK_FALSE(sites.deepSpeedStage1Reduction(otherCaller));
    // The colocated fixture's Megatron run has no DeepSpeed frame.
    const auto colocated = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/colocated_rl.pickle");
    FrameworkSites other(colocated->snapshot.frames);
    for (uint32_t stack : colocated->snapshot.devices[0].trace.stack)
        CHECK_FALSE(other.deepSpeedStage1Reduction(stack));
}

TEST_CASE("FSDP's shards, gathers and reduce-scatter are told by the functions that allocate them",
          "[analysis][frameworks]")
{
    // From PyTorch's public source (FSDP1 torch/distributed/fsdp/, FSDP2 fsdp/_fully_shard/;
    // docs/categories-and-phases.md says which versions): the site is the innermost Python frame
    // past the frames that allocate for their caller (TypedStorage._resize_, _alloc_storage,
    // FSDP2's allocate and alloc_storage, a list comprehension).
    FrameTable ft;
    FrameworkSites sites(ft);
    const std::string torch = "/usr/lib/python3/dist-packages/torch/";
    const std::string fsdp1 = torch + "distributed/fsdp/_flat_param.py", rt = torch + "distributed/fsdp/_runtime_utils.py";
    const std::string fs2 = torch + "distributed/fsdp/_fully_shard/";
    const std::string coll = fs2 + "_fsdp_collectives.py", param = fs2 + "_fsdp_param.py", group = fs2 + "_fsdp_param_group.py";
    const std::string storage = torch + "storage.py", dutils = torch + "distributed/utils.py";
    const uint32_t shard1 = stackOf(ft, {{fsdp1.c_str(), "_get_shard"}, {fsdp1.c_str(), "shard"}, {"train.py", "main"}});
    const uint32_t gather1 = stackOf(ft, {{storage.c_str(), "_resize_"}, {dutils.c_str(), "_alloc_storage"},
                                          {fsdp1.c_str(), "_alloc_padded_unsharded_flat_param"}, {fsdp1.c_str(), "unshard"},
                                          {rt.c_str(), "_pre_backward_hook"}});
    const uint32_t cast1 = stackOf(ft, {{storage.c_str(), "_resize_"}, {dutils.c_str(), "_alloc_storage"},
                                        {fsdp1.c_str(), "_use_low_precision_shard"}, {fsdp1.c_str(), "pre_unshard"}});
    const uint32_t reduce1 = stackOf(ft, {{rt.c_str(), "_get_reduce_scatter_tensors"}, {rt.c_str(), "_reduce_grad"},
                                          {rt.c_str(), "_post_backward_hook"}});
    const uint32_t shard2 = stackOf(ft, {{param.c_str(), "_init_sharded_param"}, {param.c_str(), "__init__"},
                                         {group.c_str(), "<listcomp>"}});
    const uint32_t gather2 = stackOf(ft, {{coll.c_str(), "allocate"}, {coll.c_str(), "foreach_all_gather"},
                                          {group.c_str(), "unshard"}, {fs2.c_str(), "_pre_forward"}});
    const uint32_t copyOut2 = stackOf(ft, {{param.c_str(), "alloc_storage"}, {param.c_str(), "alloc_all_gather_outputs"},
                                           {coll.c_str(), "foreach_all_gather_copy_out"}, {group.c_str(), "pre_backward"}});
    const uint32_t reduce2 = stackOf(ft, {{coll.c_str(), "allocate"}, {coll.c_str(), "foreach_reduce"},
                                          {group.c_str(), "post_backward"}});
    // A storage resize in the user's own code is nobody's site.
    const uint32_t userResize = stackOf(ft, {{storage.c_str(), "_resize_"}, {"train.py", "main"}});
    CHECK(sites.of(shard1) == FrameworkSite::FsdpFlatParameter);
    CHECK(sites.of(gather1) == FrameworkSite::FsdpGather);
    CHECK(sites.of(cast1) == FrameworkSite::FsdpCast);
    CHECK(sites.of(reduce1) == FrameworkSite::FsdpReduceScatter);
    CHECK(sites.of(shard2) == FrameworkSite::FsdpFlatParameter);
    CHECK(sites.of(gather2) == FrameworkSite::FsdpGather);
    CHECK(sites.of(copyOut2) == FrameworkSite::FsdpGather);
    CHECK(sites.of(reduce2) == FrameworkSite::FsdpReduceScatter);
    CHECK(sites.of(userResize) == FrameworkSite::None);
    // Gathering again for the backward is the resharded layout (ZeRO-3); the forward's says nothing.
    CHECK(sites.fsdpBackwardGather(gather1));
    CHECK(sites.fsdpBackwardGather(copyOut2));
    CHECK_FALSE(sites.fsdpBackwardGather(gather2));
    CHECK_FALSE(sites.fsdpBackwardGather(cast1));
}

TEST_CASE("An FSDP2 step: shards kept as parameters, gathers temporary, the reduce-scatter's output the gradient",
          "[analysis][frameworks]")
{
    // tests/tools/make_framework_fixture.py's fsdp2_scenario: two layers over two ranks.
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/fsdp2_step.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    std::map<CategoryRule, std::vector<int64_t>> byRule = sizesByRule(*trace, a);
    const int64_t MiB = 1 << 20;
    CHECK(byRule[CategoryRule::FlatParameterBuffer] == std::vector<int64_t>(2, 4 * MiB)); // the shards
    CHECK(byRule[CategoryRule::FrameworkGather] == std::vector<int64_t>(8, 8 * MiB));     // 2 layers x 2 passes x 2
    CHECK(byRule[CategoryRule::FlatGradientBuffer] == std::vector<int64_t>(2, 4 * MiB));  // the sharded gradients
    CHECK(byRule[CategoryRule::FrameworkTemporary] == std::vector<int64_t>(2, 8 * MiB));  // reduce-scatter inputs
    // Autograd's unsharded gradients, freed by foreach_reduce once copied in.
    CHECK(byRule[CategoryRule::FrameworkUnshardedGradient] == std::vector<int64_t>(2, 8 * MiB));
    std::vector<MeasuredItem> how;
    CHECK(readTraceConfig(*trace, 0, &how).zero == 3);
    bool said = false;
    for (const MeasuredItem& m : how)
        said = said || (m.key == "zero" && m.how == "read" && m.detail.find("FSDP") != std::string::npos);
    CHECK(said);
}

TEST_CASE("A DeepSpeed ZeRO-3 step: the handle's unsharded parameters are the gather, the bucket frees "
          "autograd's gradient, and a larger micro-batch grows the activations only",
          "[analysis][whatif][frameworks]")
{
    // make_framework_fixture.py's deepspeed_zero3_scenario, from DeepSpeed 38327e07's function
    // names: AllGatherCoalescedHandle.wait makes the unsharded parameters with
    // instrument_w_nvtx(torch.cat) (the wrapper's frame passes through), and
    // __add_grad_to_ipg_bucket frees autograd's gradient once copied into the bucket.
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/deepspeed_zero3_step.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    std::map<CategoryRule, std::vector<int64_t>> byRule = sizesByRule(*trace, a);
    const int64_t MiB = 1 << 20;
    CHECK(byRule[CategoryRule::FlatParameterBuffer] == std::vector<int64_t>(2, 4 * MiB)); // the partitions
    CHECK(byRule[CategoryRule::FrameworkGather] == std::vector<int64_t>(8, 8 * MiB));     // staging + unsharded
    CHECK(byRule[CategoryRule::FrameworkUnshardedGradient] == std::vector<int64_t>(2, 8 * MiB));
    CHECK(byRule[CategoryRule::FrameworkTemporary] == std::vector<int64_t>(2, 8 * MiB)); // reduce-scatter buffers
    CHECK(readTraceConfig(*trace, 0).zero == 3);

    StatedConfig stated;
    stated.microBatch = 2;
    stated.seq = 64;
    stated.devices = 2;
    stated.precision = Precision::Fp32;
    const Calibration cal = calibrate(*trace, 0, a, stated);
    CHECK(cal.baseline.gather.bytes == Approx(16.0 * MiB)); // a layer's staging buffer and its parameters
    LeverConfig t = cal.baseline.config;
    t.microBatch = 4;
    const Projection twice = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(twice.replayed);
    // 8 partitions + 8 fp32 partitions + 16 gradient buffers + 16 gathered + 2 x 12 activations
    // (88 MiB while the handle's torch.cat read as a batch temporary).
    CHECK(twice.peakAllocated == Approx(72.0 * MiB));
}

TEST_CASE("A larger micro-batch under FSDP grows the activations, not the gathered layers", "[whatif][frameworks]")
{
    // Every gather, unsharded gradient and reduce-scatter input of the fixture is 8 MiB, a layer's
    // size: before, they were read as batch temporaries (any temporary of 1 MiB or more) and the
    // peak at twice the batch was 64 MiB, not 48.
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/fsdp2_step.pickle");
    StatedConfig stated;
    stated.microBatch = 2;
    stated.seq = 64;
    stated.devices = 2;
    stated.precision = Precision::Fp32;
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), stated);
    const int64_t MiB = 1 << 20;
    CHECK(cal.baseline.gather.bytes == Approx(16.0 * MiB)); // the layer's gather and its copy-out
    CHECK(cal.baseline.gather.provenance == Provenance::Measured);
    CHECK(cal.baseline.logits.bytes == 0);
    LeverConfig t = cal.baseline.config;
    t.microBatch = 4;
    const Projection twice = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(twice.replayed);
    CHECK(twice.peakAllocated == Approx(48.0 * MiB)); // 8 shards + 16 gathers + 2 x 12 activations
    t.devices = 4;
    const Projection sharded = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(sharded.replayed);
    CHECK(sharded.peakAllocated == Approx(44.0 * MiB)); // the shards halve, the gathered layer does not
}

TEST_CASE("A run recorded under FSDP is projected as recorded without its precision: nothing is sharded anew",
          "[whatif][frameworks]")
{
    // zero = 3 is read from the gathers; the parameters' bytes are unknown without the precision.
    // Sharding them anew would divide unknown bytes, but the recorded run keeps its measured
    // shards: the CLI refused the file as it was recorded ("pass --measured-precision").
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/fsdp2_step.pickle");
    const Calibration cal = calibrate(*trace, 0, analyzeDevice(*trace, 0), {});
    REQUIRE(cal.baseline.config.zero == 3);
    REQUIRE(cal.baseline.params <= 0);
    CHECK_FALSE(cal.missing(cal.baseline.config));
    LeverConfig unsharded = cal.baseline.config;
    unsharded.zero = 0;
    unsharded.offload = Offload::Params;
    const auto m = cal.missing(unsharded); // offloading the parameters moves their bytes
    REQUIRE(m);
    CHECK(m->key == "precision");
}

namespace {

/// The calibration's "devices" item: how the device count is known, and from what.
MeasuredItem devicesOf(const Calibration& cal)
{
    for (const MeasuredItem& m : cal.measured)
        if (m.key == "devices")
            return m;
    return MeasuredItem{};
}

} // namespace

TEST_CASE("FSDP's world size read from its all-gathers: output over input, the shard or its cast",
          "[whatif][frameworks]")
{
    // FSDP2 over two ranks, no mixed precision: each layer's 8 MiB all-gather output is twice
    // its 4 MiB shard.
    const auto fsdp2 = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/fsdp2_step.pickle");
    const Calibration c2 = calibrate(*fsdp2, 0, analyzeDevice(*fsdp2, 0), {});
    CHECK(c2.baseline.config.devices == 2);
    CHECK(devicesOf(c2).how == "read");
    // FSDP1 over four ranks under bf16 mixed precision: the 8 MiB padded unsharded flat parameter
    // is twice the 4 MiB fp32 shard but four times the 2 MiB bf16 copy the all-gather sends.
    const auto fsdp1 = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/fsdp1_mixed_step.pickle");
    const DeviceAnalysis a1 = analyzeDevice(*fsdp1, 0);
    const Calibration c1 = calibrate(*fsdp1, 0, a1, {});
    CHECK(c1.baseline.config.devices == 4);
    CHECK(devicesOf(c1).detail.find("the gather's dtype") != std::string::npos);
    // Both sharded from ZeRO-2 on: the state over the gradients is AdamW's 2, not 2 x 4.
    bool ratio = false;
    for (const MeasuredItem& m : c1.measured)
        ratio = ratio || (m.key == "optimizer" && m.detail.find("gradients = 2.0") != std::string::npos);
    CHECK(ratio);
    // The same rules as FSDP2's: shards, gathers, unsharded gradients by the free's stack.
    const MemoryTimeline& tl = fsdp1->timelines[0];
    std::map<CategoryRule, int64_t> byRule;
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        byRule[a1.classes[i].rule] += tl.allocations[i].size;
    const int64_t MiB = 1 << 20;
    CHECK(byRule[CategoryRule::FlatParameterBuffer] == 8 * MiB);
    CHECK(byRule[CategoryRule::FrameworkGather] == 32 * MiB);
    CHECK(byRule[CategoryRule::FrameworkUnshardedGradient] == 16 * MiB);
    CHECK(byRule[CategoryRule::FlatGradientBuffer] == 8 * MiB);
    // A window that opens in a forward holds half of its gathers: 8 MiB over 8 MiB of shards
    // would read one rank where there are two. It reads none.
    const auto cut = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/fsdp2_wrapped_step.pickle");
    const Calibration cc = calibrate(*cut, 0, analyzeDevice(*cut, 0), {});
    CHECK(devicesOf(cc).how == "unknown");
    CHECK(devicesOf(cc).detail.find("no forward whole") != std::string::npos);
    // A device count stated wins, and the reading is said beside it.
    StatedConfig stated;
    stated.devices = 8;
    const Calibration s1 = calibrate(*fsdp1, 0, a1, stated);
    CHECK(s1.baseline.config.devices == 8);
    CHECK(devicesOf(s1).detail.find("the trace says 4") != std::string::npos);
}

TEST_CASE("DeepSpeed's and Megatron's world size: the flat parameters over the fp32 master partition, "
          "every reading the precision leaves open",
          "[whatif][frameworks]")
{
    // DeepSpeed ZeRO-1: 8 MiB of flat parameters, an 8 MiB fp32 partition. Two ranks if the
    // parameters are 16-bit, one if fp32; the stacks do not tell which.
    const auto ds = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/deepspeed_zero1.pickle");
    const DeviceAnalysis a = analyzeDevice(*ds, 0);
    const MeasuredItem open = devicesOf(calibrate(*ds, 0, a, {}));
    CHECK(open.how == "unknown");
    CHECK(open.detail.find("2 with 16-bit parameters, 1 with fp32 parameters") != std::string::npos);
    StatedConfig bf16;
    bf16.precision = Precision::Bf16;
    CHECK(calibrate(*ds, 0, a, bf16).baseline.config.devices == 2);
    StatedConfig fp32;
    fp32.precision = Precision::Fp32;
    CHECK(calibrate(*ds, 0, a, fp32).baseline.config.devices == 1);
    // Megatron's DistributedOptimizer: 8 MiB of param_data, 16 MiB of fp32 main parameters: one
    // rank with 16-bit parameters; fp32 ones would make half a rank, so that reading is dropped.
    const auto rl = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/colocated_rl.pickle");
    const Calibration mc = calibrate(*rl, 0, analyzeDevice(*rl, 0), {});
    CHECK(devicesOf(mc).how == "read");
    CHECK(mc.baseline.config.devices == 1);
}

TEST_CASE("A first step's kept optimizer state counts beside a framework's fp32 main parameters", "[whatif][frameworks]")
{
    // DeepSpeed ZeRO-3's fp32 partitions (8 MiB) are made before the step; AdamW's first step
    // keeps 16 MiB of moments beside them. Every later step holds all 24 MiB through its forward
    // and backward; the calibration read the 8 MiB alone (only a step with no state before it
    // counted as a first step).
    const int64_t MiB = 1 << 20;
    const auto ds = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/deepspeed_zero3_step.pickle");
    const Calibration dc = calibrate(*ds, 0, analyzeDevice(*ds, 0), {});
    CHECK(dc.baseline.optimizer.bytes == Approx(24.0 * MiB));
    CHECK(dc.firstStep);
    // Megatron's 16 MiB of main parameters and the fixture's step's 8 MiB of moments; the
    // vLLM engine beside it is counted once, as a constant, and never as the step's temporaries.
    const auto rl = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/colocated_rl.pickle");
    const Calibration rc = calibrate(*rl, 0, analyzeDevice(*rl, 0), {});
    CHECK(rc.baseline.optimizer.bytes == Approx(24.0 * MiB));
    CHECK(rc.baseline.optTemp.bytes < 1.0 * MiB);
    CHECK(rc.baseline.kvCache.bytes + rc.baseline.engineWeights.bytes == Approx(30.0 * MiB));
    CHECK(rc.baseline.constTemp.bytes == 0); // the engine's terms of their own, counted once
    CHECK(rc.baseline.weights.bytes == Approx(8.0 * MiB));    // Megatron's param_data, not vLLM's weights
}

TEST_CASE("An engine's KV cache and weights stay whole and exact when the training's batch moves",
          "[whatif][frameworks]")
{
    // They were among the constant temporaries, which a batch lever widens by up to their whole
    // size (workspaces below 1 MiB may be logits): at twice the batch the colocated fixture's band
    // was 88.5 to 149 MiB, 30 MiB of it the vLLM engine's. A 20 GiB cache would add 20 GiB.
    const auto rl = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/colocated_rl.pickle");
    StatedConfig stated;
    stated.microBatch = 2;
    const Calibration cal = calibrate(*rl, 0, analyzeDevice(*rl, 0), stated);
    const int64_t MiB = 1 << 20;
    CHECK(cal.baseline.kvCache.bytes == Approx(24.0 * MiB));
    CHECK(cal.baseline.engineWeights.bytes == Approx(6.0 * MiB));
    LeverConfig t = cal.baseline.config;
    t.microBatch = 4;
    const Projection twice = project(cal.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    bool kv = false, weights = false;
    for (const PhaseProjection& ph : twice.phases)
        for (const Component& c : ph.components) {
            if (c.name == "kv_cache")
                kv = c.bytes == Approx(24.0 * MiB) && c.highErr() <= 0.01;
            if (c.name == "engine_weights")
                weights = c.bytes == Approx(6.0 * MiB) && c.highErr() <= 0.01;
        }
    CHECK(kv);
    CHECK(weights);
    CHECK(twice.peakAllocatedHigh - twice.peakAllocatedLow < 0.1 * twice.peakAllocated);
}

TEST_CASE("An inference engine's weights sit under the layer whose constructor made them", "[analysis][frameworks]")
{
    // vLLM's linear methods make a layer's weights in create_weights, which the layer's
    // __init__ calls while the engine builds its model: no forward runs, so no _call_impl frame.
    FrameTable ft;
    const uint32_t vllm = stackOf(ft, {{"/usr/lib/python3/dist-packages/torch/utils/_device.py", "__torch_function__"},
                                       {"/opt/venv/lib/python3.11/site-packages/vllm/model_executor/layers/linear.py",
                                        "create_weights"},
                                       {"/opt/venv/lib/python3.11/site-packages/vllm/model_executor/layers/linear.py",
                                        "__init__"},
                                       {"/opt/venv/lib/python3.11/site-packages/vllm/model_executor/models/llama.py",
                                        "__init__"},
                                       {"/home/user/rl/main_ppo.py", "main"}});
    const uint32_t layer = engineLayerConstructorFrame(ft, vllm);
    REQUIRE(layer != UINT32_MAX);
    CHECK(ft.formatFrame(layer).find("layers/linear.py:1:__init__") != std::string::npos); // the innermost __init__
    // A create_weights of the user's own is not an engine's loader: no module is guessed.
    CHECK(engineLayerConstructorFrame(ft, stackOf(ft, {{"/home/user/model.py", "create_weights"},
                                                       {"/home/user/model.py", "__init__"}})) == UINT32_MAX);
    // On the colocated RL fixture: the three weights, 6 MiB, under vLLM's layer constructor.
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/frameworks/colocated_rl.pickle");
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const LiveGroups g = LiveGroups::at(*trace, 0, a, trace->timelines[0].peakEventIndex, 20);
    const auto built = std::find_if(g.byModule.begin(), g.byModule.end(),
                                    [](const ModuleGroup& m) { return m.source == "constructor"; });
    REQUIRE(built != g.byModule.end());
    CHECK(built->forward.find("vllm/model_executor/layers/linear.py:318:__init__") != std::string::npos);
    CHECK(built->bytes == 6 << 20);
    CHECK(built->byCategory[size_t(TensorCategory::EngineWeights)] == 6 << 20);
}
