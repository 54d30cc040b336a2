// SPDX-License-Identifier: MIT
#include "core/analysis/frameworksites.h"

namespace headroom {

namespace {

constexpr std::string_view kDdpFile = "torch/nn/parallel/distributed.py";
constexpr std::string_view kZeroFile = "torch/distributed/optim/zero_redundancy_optimizer.py";
constexpr std::string_view kDeepSpeedEngine = "deepspeed/runtime/engine.py";
constexpr std::string_view kDeepSpeedZero12 = "deepspeed/runtime/zero/stage_1_and_2.py";

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

/// A frame the public sources say allocates a framework's own memory: its file (a suffix of
/// the absolute site-packages path) and function ("" : any function of the file).
struct SiteFrame {
    std::string_view file;
    std::string_view function;
    FrameworkSite site;
};

// From the public repositories (docs/categories-and-phases.md, "Frameworks' own memory").
// SGLang allocates inside list comprehensions: "<listcomp>" on Python 3.11 and older, so the
// whole file is its pool.
constexpr SiteFrame kSiteFrames[] = {
    {"vllm/worker/cache_engine.py", "_allocate_kv_cache", FrameworkSite::VllmKvCache},
    {"vllm/v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors", FrameworkSite::VllmKvCache},
    {"vllm/v1/worker/gpu_model_runner.py", "initialize_kv_cache_tensors", FrameworkSite::VllmKvCache},
    {"vllm/v1/worker/utils.py", "allocate_kv_cache", FrameworkSite::VllmKvCache},
    {"vllm/v1/worker/kv_connector_model_runner_mixin.py", "allocate_uniform_kv_caches", FrameworkSite::VllmKvCache},
    {"vllm/v1/worker/gpu/attn_utils.py", "_allocate_kv_cache", FrameworkSite::VllmKvCache},
    {"sglang/srt/mem_cache/memory_pool.py", "", FrameworkSite::SglangKvCache},
    {"megatron/core/distributed/param_and_grad_buffer.py", "__init__", FrameworkSite::MegatronParamAndGradBuffer},
    {"megatron/core/optimizer/distrib_optimizer.py", "_build_model_and_main_param_groups",
     FrameworkSite::MegatronMainParams},
    {"megatron/core/optimizer/optimizer.py", "__init__", FrameworkSite::MegatronFloat16MainParams},
    {"deepspeed/runtime/zero/stage_1_and_2.py", "__init__", FrameworkSite::DeepSpeedZeroInit},
    {"deepspeed/runtime/zero/stage_1_and_2.py", "backward", FrameworkSite::DeepSpeedGradBuffer},
    {"deepspeed/runtime/zero/stage_1_and_2.py", "reduce_gradients", FrameworkSite::DeepSpeedGradBuffer},
    {"deepspeed/runtime/zero/stage_1_and_2.py", "copy_grads_in_partition", FrameworkSite::DeepSpeedZero2GradPartition},
    {"deepspeed/runtime/zero/stage3.py", "defragment", FrameworkSite::DeepSpeedParamPartition},
    {"deepspeed/runtime/zero/stage3.py", "_create_fp32_partitions", FrameworkSite::DeepSpeedMasterPartition},
    {"deepspeed/runtime/zero/stage3.py", "_setup_for_real_optimizer", FrameworkSite::DeepSpeedGradBuffer},
    {"deepspeed/runtime/zero/partition_parameters.py", "_partition_param", FrameworkSite::DeepSpeedParamPartition},
    {"deepspeed/runtime/zero/partition_parameters.py", "all_gather_coalesced", FrameworkSite::DeepSpeedGather},
    {"deepspeed/runtime/zero/partition_parameters.py", "_all_gather_dtype", FrameworkSite::DeepSpeedGather},
};

/// The site a Python frame is, where the table names it.
FrameworkSite siteOfFrame(std::string_view file, std::string_view name)
{
    for (const SiteFrame& s : kSiteFrames)
        if (endsWith(file, s.file) && (s.function.empty() || s.function == name))
            return s.site;
    return FrameworkSite::None;
}

} // namespace

std::string_view frameworkSiteName(FrameworkSite s)
{
    switch (s) {
    case FrameworkSite::None: return "none";
    case FrameworkSite::DdpReducer: return "DistributedDataParallel's Reducer";
    case FrameworkSite::DdpConstruction: return "DistributedDataParallel's constructor";
    case FrameworkSite::ZeroRedundancyOptimizer: return "ZeroRedundancyOptimizer";
    case FrameworkSite::VllmKvCache: return "vLLM's KV cache";
    case FrameworkSite::SglangKvCache: return "SGLang's memory pool";
    case FrameworkSite::MegatronParamAndGradBuffer: return "Megatron's param-and-grad buffer";
    case FrameworkSite::MegatronMainParams: return "Megatron's DistributedOptimizer";
    case FrameworkSite::MegatronFloat16MainParams: return "Megatron's fp32 main parameters";
    case FrameworkSite::DeepSpeedZeroInit: return "DeepSpeed ZeRO-1/2's flat groups";
    case FrameworkSite::DeepSpeedParamPartition: return "DeepSpeed's parameter partitions";
    case FrameworkSite::DeepSpeedMasterPartition: return "DeepSpeed ZeRO-3's fp32 partitions";
    case FrameworkSite::DeepSpeedGradBuffer: return "DeepSpeed's gradient buffers";
    case FrameworkSite::DeepSpeedZero2GradPartition: return "DeepSpeed ZeRO-2's gradient partition";
    case FrameworkSite::DeepSpeedGather: return "DeepSpeed ZeRO-3's parameter gather";
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
        // The frameworks allocate with a torch call (a C++ op, no Python frame), so their own
        // function is the innermost Python frame.
        if (innermostPython)
            if (const FrameworkSite s = siteOfFrame(file, name); s != FrameworkSite::None)
                return s;
        innermostPython = false;
    }
    return FrameworkSite::None;
}

const Frame* FrameworkSites::siteFrame(uint32_t stack) const
{
    for (uint32_t f : m_frames.stack(stack)) {
        const Frame& fr = m_frames.frame(f);
        const std::string_view file = m_frames.strings().get(fr.file);
        if (endsWith(file, ".py"))
            return siteOfFrame(file, m_frames.strings().get(fr.name)) != FrameworkSite::None ? &fr : nullptr;
    }
    return nullptr;
}

bool FrameworkSites::deepSpeedStage1Reduction(uint32_t stack) const
{
    bool reduce = false; // the previous Python frame was stage_1_and_2.py's reduce_gradients
    bool found = false;
    for (uint32_t f : m_frames.stack(stack)) {
        const Frame& fr = m_frames.frame(f);
        const std::string_view file = m_frames.strings().get(fr.file);
        if (!endsWith(file, ".py"))
            continue;
        if (file.find("deepspeed/runtime/zenflow/") != std::string_view::npos)
            return false;
        const std::string_view name = m_frames.strings().get(fr.name);
        found = found || (reduce && endsWith(file, kDeepSpeedEngine) && name == "allreduce_gradients");
        reduce = endsWith(file, kDeepSpeedZero12) && name == "reduce_gradients";
    }
    return found;
}

int64_t FrameworkSites::line(uint32_t stack) const
{
    const Frame* fr = siteFrame(stack);
    return fr ? fr->line : 0;
}

} // namespace headroom
