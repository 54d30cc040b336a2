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
    // From the public sources only (no file here was recorded with them; docs say which
    // versions): inference engines' KV caches, Megatron's and DeepSpeed's flat buffers.
    /// vLLM's KV cache: CacheEngine._allocate_kv_cache (V0), the V1 model runner's
    /// _allocate_kv_cache_tensors / initialize_kv_cache_tensors, allocate_kv_cache,
    /// allocate_uniform_kv_caches, the V2 runner's attn_utils._allocate_kv_cache.
    VllmKvCache,
    /// SGLang's memory pool (sglang/srt/mem_cache/memory_pool.py): the KV buffers of its
    /// TokenToKVPool classes and the request-to-token table.
    SglangKvCache,
    /// An inference engine building and loading its model: vLLM's model_executor/model_loader/
    /// (load_model, initialize_model, the weight reload) or SGLang's srt/model_loader/ anywhere
    /// on the stack, whatever the layers' own frames inside it.
    EngineModelLoad,
    /// Megatron-core's _ParamAndGradBuffer.__init__: param_data and grad_data, two statements
    /// in that order in every version read (told apart by their lines: FrameworkSites::line).
    MegatronParamAndGradBuffer,
    /// Megatron-core's fp32 main parameters, sharded: DistributedOptimizer.
    /// _build_model_and_main_param_groups (`.clone().float()`), a ZeRO-1 layout.
    MegatronMainParams,
    /// Megatron-core's fp32 main parameters, whole: Float16OptimizerWithFloat16Params.__init__.
    MegatronFloat16MainParams,
    /// DeepSpeed ZeRO-1/2's optimizer constructor (stage_1_and_2.py __init__): the flat 16-bit
    /// parameter groups first, then the fp32 partitions (told apart by their lines).
    DeepSpeedZeroInit,
    /// DeepSpeed's flat parameter partitions: ZeRO-3's defragment and Init._partition_param.
    DeepSpeedParamPartition,
    /// DeepSpeed ZeRO-3's fp32 partitions (stage3.py _create_fp32_partitions).
    DeepSpeedMasterPartition,
    /// DeepSpeed's gradient buffers: ZeRO-1/2's reduce bucket (backward, reduce_gradients) and
    /// ZeRO-3's (_setup_for_real_optimizer).
    DeepSpeedGradBuffer,
    /// DeepSpeed ZeRO-2's contiguous gradient partition (copy_grads_in_partition): a gradient
    /// buffer that only stage 2 makes.
    DeepSpeedZero2GradPartition,
    /// DeepSpeed ZeRO-3's all-gather of a layer's parameters for its forward or backward: the
    /// staging buffer (_all_gather_dtype) and the unsharded parameters the handle's wait makes.
    DeepSpeedGather,
    /// DeepSpeed ZeRO-3's gradient reduction in the backward (stage3.py's ipg bucket,
    /// __reduce_and_partition_ipg_grads, partition_grads; reduce_scatter_coalesced): it frees
    /// autograd's unsharded gradient once copied into the bucket, and what stays is the partition.
    DeepSpeedGradReduce,
    // PyTorch's FSDP, from its public source (FSDP1 torch/distributed/fsdp/; FSDP2
    // _composable/fsdp/, later fsdp/_fully_shard/): no file here was recorded with it.
    /// The flat parameter's local shard (FSDP1 _get_shard; flatten_tensors, which is the whole
    /// parameter under NO_SHARD and otherwise freed once sharded) and FSDP2's sharded parameters
    /// (_init_sharded_param, reset_sharded_param).
    FsdpFlatParameter,
    /// A layer's parameters all-gathered for its forward or backward (FSDP1
    /// _alloc_padded_unsharded_flat_param; FSDP2 foreach_all_gather, all_gather_copy_in_cuda, the
    /// copy-out's alloc_all_gather_outputs / init_all_gather_outputs, wait_for_unshard).
    FsdpGather,
    /// FSDP1's low-precision shard under mixed precision and its offload copy
    /// (_use_low_precision_shard, flat_param_to): a cast, not a gather.
    FsdpCast,
    /// The gradients' reduce-scatter: FSDP1 _post_backward_hook, _reduce_grad,
    /// _get_reduce_scatter_tensors, _cast_grad_to_param_dtype, _accumulate_sharded_grad; FSDP2
    /// foreach_reduce, foreach_reduce_scatter. What stays is the sharded gradient.
    FsdpReduceScatter,
};

std::string_view frameworkSiteName(FrameworkSite s);

/// The site of one stack, each stack looked at once (a trace repeats a few thousand stacks).
class FrameworkSites {
public:
    explicit FrameworkSites(const FrameTable& frames) : m_frames(frames) {}
    FrameworkSite of(uint32_t stack);
    /// The line of the framework's own frame in `stack` (0: none), for the sites whose
    /// allocations are told apart by the statement that made them.
    int64_t line(uint32_t stack) const;
    /// DeepSpeed's engine reducing the gradients of a ZeRO-1 run: stage_1_and_2.py's
    /// reduce_gradients called by engine.py's allreduce_gradients, which calls it only at stage
    /// 1 (stages 2 and 3 reduce in the backward's hooks); ZenFlow's optimizer, which is called so at
    /// stage 2 too, is told apart by its own frames. Any event's stack, a free's included (the
    /// reduction frees each gradient it has reduced).
    bool deepSpeedStage1Reduction(uint32_t stack) const;
    /// FSDP gathering a layer's parameters for the backward (FSDP1's _pre_backward_hook, FSDP2's
    /// pre_backward): parameters resharded after the forward, FULL_SHARD, ZeRO-3's layout.
    bool fsdpBackwardGather(uint32_t stack);
    /// What an FSDP gather allocation is to the all-gather collective (worldsize.h reads the
    /// world size from the two): its output, world size x the input (FSDP1's
    /// _alloc_padded_unsharded_flat_param, FSDP2's buffer made in foreach_all_gather or
    /// all_gather_copy_in_cuda), or its input made for it in the gather's dtype (FSDP1's
    /// low-precision shard, FSDP2's mixed-precision copy-in in _get_param_all_gather_inputs or
    /// _to_dtype_if_needed). Neither: the copy-out, a shard, anything else.
    enum class GatherPart : uint8_t { None, Output, Input };
    GatherPart fsdpGatherPart(uint32_t stack);

private:
    FrameworkSite classify(uint32_t stack) const;
    /// The innermost Python frame of `stack` when the site table names it.
    const Frame* siteFrame(uint32_t stack) const;
    const FrameTable& m_frames;
    std::unordered_map<uint32_t, FrameworkSite> m_seen;
};

} // namespace headroom
