// SPDX-License-Identifier: MIT
#include "core/analysis/frameworksites.h"

#include "core/util/text.h"

namespace headroom {

namespace {

constexpr std::string_view kDdpFile = "torch/nn/parallel/distributed.py";
constexpr std::string_view kZeroFile = "torch/distributed/optim/zero_redundancy_optimizer.py";
constexpr std::string_view kDeepSpeedEngine = "deepspeed/runtime/engine.py";
constexpr std::string_view kDeepSpeedZero12 = "deepspeed/runtime/zero/stage_1_and_2.py";

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
    // AllGatherCoalescedHandle.wait: param.data = torch.cat(partitions), the unsharded parameters
    // (the file's handles' wait methods all complete a gather).
    {"deepspeed/runtime/zero/partition_parameters.py", "wait", FrameworkSite::DeepSpeedGather},
    {"deepspeed/runtime/zero/stage3.py", "__add_grad_to_ipg_bucket", FrameworkSite::DeepSpeedGradReduce},
    {"deepspeed/runtime/zero/stage3.py", "__reduce_and_partition_ipg_grads", FrameworkSite::DeepSpeedGradReduce},
    {"deepspeed/runtime/zero/stage3.py", "__avg_scatter_grads", FrameworkSite::DeepSpeedGradReduce},
    {"deepspeed/runtime/zero/stage3.py", "partition_grads", FrameworkSite::DeepSpeedGradReduce},
    {"deepspeed/runtime/comm/coalesced_collectives.py", "reduce_scatter_coalesced", FrameworkSite::DeepSpeedGradReduce},
    // FSDP1 (flat_param.py became _flat_param.py in 2.1).
    {"torch/distributed/fsdp/_flat_param.py", "_get_shard", FrameworkSite::FsdpFlatParameter},
    {"torch/distributed/fsdp/flat_param.py", "_get_shard", FrameworkSite::FsdpFlatParameter},
    {"torch/distributed/fsdp/_flat_param.py", "flatten_tensors", FrameworkSite::FsdpFlatParameter},
    {"torch/distributed/fsdp/flat_param.py", "flatten_tensors", FrameworkSite::FsdpFlatParameter},
    {"torch/distributed/fsdp/_flat_param.py", "_alloc_padded_unsharded_flat_param", FrameworkSite::FsdpGather},
    {"torch/distributed/fsdp/flat_param.py", "_alloc_padded_unsharded_flat_param", FrameworkSite::FsdpGather},
    {"torch/distributed/fsdp/_flat_param.py", "_use_low_precision_shard", FrameworkSite::FsdpCast},
    {"torch/distributed/fsdp/flat_param.py", "_use_low_precision_shard", FrameworkSite::FsdpCast},
    {"torch/distributed/fsdp/_flat_param.py", "flat_param_to", FrameworkSite::FsdpCast},
    {"torch/distributed/fsdp/flat_param.py", "flat_param_to", FrameworkSite::FsdpCast},
    {"torch/distributed/fsdp/_runtime_utils.py", "_post_backward_hook", FrameworkSite::FsdpReduceScatter},
    {"torch/distributed/fsdp/_runtime_utils.py", "_reduce_grad", FrameworkSite::FsdpReduceScatter},
    {"torch/distributed/fsdp/_runtime_utils.py", "_get_reduce_scatter_tensors", FrameworkSite::FsdpReduceScatter},
    {"torch/distributed/fsdp/_runtime_utils.py", "_cast_grad_to_param_dtype", FrameworkSite::FsdpReduceScatter},
    {"torch/distributed/fsdp/_runtime_utils.py", "_accumulate_sharded_grad", FrameworkSite::FsdpReduceScatter},
    // FSDP2 (torch/distributed/_composable/fsdp/ until about 2.5, fsdp/_fully_shard/ after; its
    // files' names are its own).
    {"/_fsdp_param.py", "_init_sharded_param", FrameworkSite::FsdpFlatParameter},
    {"/_fsdp_param.py", "reset_sharded_param", FrameworkSite::FsdpFlatParameter},
    {"/_fsdp_param.py", "init_all_gather_outputs", FrameworkSite::FsdpGather},
    {"/_fsdp_param.py", "alloc_all_gather_outputs", FrameworkSite::FsdpGather},
    {"/_fsdp_param.py", "init_unsharded_param", FrameworkSite::FsdpGather},
    {"/_fsdp_collectives.py", "foreach_all_gather", FrameworkSite::FsdpGather},
    {"/_fsdp_collectives.py", "all_gather_copy_in_cuda", FrameworkSite::FsdpGather},
    {"/_fsdp_collectives.py", "foreach_all_gather_copy_out", FrameworkSite::FsdpGather},
    {"/_fsdp_collectives.py", "_get_param_all_gather_inputs", FrameworkSite::FsdpGather},
    {"/_fsdp_collectives.py", "foreach_reduce", FrameworkSite::FsdpReduceScatter},
    {"/_fsdp_collectives.py", "foreach_reduce_scatter", FrameworkSite::FsdpReduceScatter},
    {"/_fsdp_param_group.py", "wait_for_unshard", FrameworkSite::FsdpGather},
};

/// Frames that allocate on behalf of their caller, so the site is the next Python frame out:
/// TypedStorage._resize_ (FSDP1's _alloc_storage resizes a storage), the storage helpers and
/// FSDP2's allocator mixins and casts, and comprehensions and lambdas (`<listcomp>` until
/// Python 3.12 folded them into their function).
bool passesThrough(std::string_view file, std::string_view name)
{
    // deepspeed/utils/nvtx.py: instrument_w_nvtx's wrapper, around DeepSpeed's own functions and
    // around the torch calls they allocate with (instrument_w_nvtx(torch.cat)).
    if (name.starts_with("<") || endsWith(file, "torch/storage.py") || endsWith(file, "deepspeed/utils/nvtx.py"))
        return true;
    if (endsWith(file, "torch/distributed/utils.py"))
        return name == "_alloc_storage";
    const bool fsdp2 = file.find("/_fsdp_") != std::string_view::npos;
    return fsdp2 && (name == "alloc_storage" || name == "allocate" || name == "allocate_memory" ||
                     name == "_to_dtype_if_needed" || name == "all_gather_inputs");
}

/// An inference engine's model loader: its frame is outermost of the engine's, with the model's
/// constructor, its layers' create_weights and torch's DeviceContext inside it.
bool isEngineLoaderFile(std::string_view file)
{
    return file.find("vllm/model_executor/model_loader/") != std::string_view::npos ||
           file.find("sglang/srt/model_loader/") != std::string_view::npos;
}

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
    case FrameworkSite::EngineModelLoad: return "an inference engine's model loader";
    case FrameworkSite::MegatronParamAndGradBuffer: return "Megatron's param-and-grad buffer";
    case FrameworkSite::MegatronMainParams: return "Megatron's DistributedOptimizer";
    case FrameworkSite::MegatronFloat16MainParams: return "Megatron's fp32 main parameters";
    case FrameworkSite::DeepSpeedZeroInit: return "DeepSpeed ZeRO-1/2's flat groups";
    case FrameworkSite::DeepSpeedParamPartition: return "DeepSpeed's parameter partitions";
    case FrameworkSite::DeepSpeedMasterPartition: return "DeepSpeed ZeRO-3's fp32 partitions";
    case FrameworkSite::DeepSpeedGradBuffer: return "DeepSpeed's gradient buffers";
    case FrameworkSite::DeepSpeedZero2GradPartition: return "DeepSpeed ZeRO-2's gradient partition";
    case FrameworkSite::DeepSpeedGather: return "DeepSpeed ZeRO-3's parameter gather";
    case FrameworkSite::DeepSpeedGradReduce: return "DeepSpeed ZeRO-3's gradient reduction";
    case FrameworkSite::FsdpFlatParameter: return "FSDP's sharded parameters";
    case FrameworkSite::FsdpGather: return "FSDP's parameter all-gather";
    case FrameworkSite::FsdpCast: return "FSDP's low-precision shard";
    case FrameworkSite::FsdpReduceScatter: return "FSDP's gradient reduce-scatter";
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
    bool engineLoader = false;
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
        innermostPython = innermostPython && passesThrough(file, name);
        engineLoader = engineLoader || isEngineLoaderFile(file);
    }
    return engineLoader ? FrameworkSite::EngineModelLoad : FrameworkSite::None;
}

const Frame* FrameworkSites::siteFrame(uint32_t stack) const
{
    for (uint32_t f : m_frames.stack(stack)) {
        const Frame& fr = m_frames.frame(f);
        const std::string_view file = m_frames.strings().get(fr.file);
        if (!endsWith(file, ".py"))
            continue;
        const std::string_view name = m_frames.strings().get(fr.name);
        if (siteOfFrame(file, name) != FrameworkSite::None)
            return &fr;
        if (!passesThrough(file, name))
            return nullptr;
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

bool FrameworkSites::fsdpBackwardGather(uint32_t stack)
{
    if (of(stack) != FrameworkSite::FsdpGather)
        return false;
    for (uint32_t f : m_frames.stack(stack)) {
        const Frame& fr = m_frames.frame(f);
        const std::string_view file = m_frames.strings().get(fr.file);
        const std::string_view name = m_frames.strings().get(fr.name);
        if ((name == "_pre_backward_hook" && endsWith(file, "torch/distributed/fsdp/_runtime_utils.py")) ||
            (name == "pre_backward" && file.find("/_fsdp_") != std::string_view::npos))
            return true;
    }
    return false;
}

FrameworkSites::GatherPart FrameworkSites::fsdpGatherPart(uint32_t stack)
{
    const FrameworkSite site = of(stack);
    if (site == FrameworkSite::FsdpCast)
        return GatherPart::Input;
    if (site != FrameworkSite::FsdpGather)
        return GatherPart::None;
    for (uint32_t f : m_frames.stack(stack))
        if (m_frames.strings().get(m_frames.frame(f).name) == "_to_dtype_if_needed")
            return GatherPart::Input; // FSDP2's all_gather_inputs cast before the foreach fast path
    const Frame* fr = siteFrame(stack);
    const std::string_view name = fr ? m_frames.strings().get(fr->name) : std::string_view();
    if (name == "_get_param_all_gather_inputs")
        return GatherPart::Input;
    if (name == "foreach_all_gather" || name == "all_gather_copy_in_cuda" || name == "_alloc_padded_unsharded_flat_param")
        return GatherPart::Output;
    return GatherPart::None;
}

int64_t FrameworkSites::line(uint32_t stack) const
{
    const Frame* fr = siteFrame(stack);
    return fr ? fr->line : 0;
}

} // namespace headroom
