// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/traceconfig.h"

#include "core/analysis/frameworksites.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <unordered_set>

namespace headroom {

namespace {

std::optional<Precision> precisionFromText(std::string v)
{
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (auto p = precisionFromName(v))
        return p;
    if (v == "bf16-mixed" || v == "amp_bf16" || v == "autocast")
        return Precision::AmpBf16;
    if (v == "16-mixed" || v == "fp16-mixed" || v == "amp_fp16" || v == "fp16")
        return Precision::AmpFp16;
    if (v == "bf16-true" || v == "bfloat16" || v == "torch.bfloat16")
        return Precision::Bf16;
    if (v == "32" || v == "32-true" || v == "float32" || v == "torch.float32")
        return Precision::Fp32;
    return std::nullopt;
}

struct Reader {
    StatedConfig cfg;
    std::vector<MeasuredItem> items;
    std::string source; ///< where the text being scanned comes from; "" = quote the text
    void note(const char* key, std::string value, const std::string& text)
    {
        for (auto& it : items)
            if (it.key == key)
                return; // first source wins
        items.push_back({key, std::move(value), "read", source.empty() ? "'" + text.substr(0, 80) + "'" : source});
    }
    void scan(const std::string& text)
    {
        static const std::regex kv(R"(([A-Za-z_][A-Za-z_\-]*)\s*[=:]\s*([A-Za-z0-9_.\-]+))");
        for (auto it = std::sregex_iterator(text.begin(), text.end(), kv); it != std::sregex_iterator(); ++it) {
            std::string key = (*it)[1], val = (*it)[2];
            std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c == '-' ? '_' : c); });
            auto num = [&]() -> std::optional<int> {
                try {
                    size_t pos = 0;
                    int v = std::stoi(val, &pos);
                    return pos == val.size() && v > 0 ? std::optional<int>(v) : std::nullopt;
                } catch (...) {
                    return std::nullopt;
                }
            };
            if ((key == "micro_batch" || key == "microbatch" || key == "mbs" || key == "batch_size" ||
                 key == "micro_batch_size" || key == "bs") && num() && !cfg.microBatch) {
                cfg.microBatch = num();
                note("micro_batch", val, text);
            } else if ((key == "seq" || key == "seq_len" || key == "seqlen" || key == "sequence_length" ||
                        key == "max_seq_len" || key == "block_size") && num() && !cfg.seq) {
                cfg.seq = num();
                note("seq", val, text);
            } else if ((key == "precision" || key == "dtype" || key == "amp") && !cfg.precision) {
                if (auto p = precisionFromText(val)) {
                    cfg.precision = p;
                    note("precision", std::string(precisionName(*p)), text);
                }
            } else if ((key == "world_size" || key == "devices" || key == "num_gpus" || key == "n_gpus") && num() &&
                       !cfg.devices) {
                cfg.devices = num();
                note("devices", val, text);
            } else if ((key == "grad_accum" || key == "accum" || key == "gradient_accumulation_steps") && num() &&
                       !cfg.accum) {
                cfg.accum = num();
                note("accum", val, text);
            }
        }
    }
};

/// The optimizer class from `Optimizer.step#AdamW.step`.
std::optional<OptimizerKind> optimizerFromAnnotation(const std::string& name)
{
    static const std::string prefix = "Optimizer.step#";
    if (name.rfind(prefix, 0) != 0)
        return std::nullopt;
    std::string cls = name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size());
    std::transform(cls.begin(), cls.end(), cls.begin(), [](unsigned char c) { return std::tolower(c); });
    if (cls.find("8bit") != std::string::npos)
        return OptimizerKind::Adam8bit;
    if (cls.find("adafactor") != std::string::npos)
        return OptimizerKind::Adafactor;
    if (cls.find("adam") != std::string::npos)
        return OptimizerKind::AdamW;
    if (cls.find("sgd") != std::string::npos)
        return OptimizerKind::Sgd;
    return std::nullopt;
}

/// The sharding stage from the frameworks' code in the device's stacks, unless a record said it:
/// ZeroRedundancyOptimizer's step is ZeRO stage 1; DDP's Reducer without it, no sharding.
void readSharding(Reader& r, const Snapshot& snapshot, size_t deviceIndex)
{
    if (r.cfg.zero || deviceIndex >= snapshot.devices.size())
        return;
    FrameworkSites sites(snapshot.frames);
    bool ddp = false, zero = false, megatron = false, deepspeed1 = false, deepspeed2 = false, deepspeed3 = false;
    bool fsdp3 = false;
    std::unordered_set<uint32_t> seen; // a trace repeats a few thousand stacks over millions of events
    for (uint32_t stack : snapshot.devices[deviceIndex].trace.stack) {
        if (!seen.insert(stack).second)
            continue;
        const FrameworkSite s = sites.of(stack);
        deepspeed1 = deepspeed1 || sites.deepSpeedStage1Reduction(stack);
        zero = zero || s == FrameworkSite::ZeroRedundancyOptimizer;
        ddp = ddp || s == FrameworkSite::DdpReducer || s == FrameworkSite::DdpConstruction;
        megatron = megatron || s == FrameworkSite::MegatronMainParams;
        deepspeed3 = deepspeed3 || s == FrameworkSite::DeepSpeedGather || s == FrameworkSite::DeepSpeedMasterPartition;
        deepspeed2 = deepspeed2 || s == FrameworkSite::DeepSpeedZero2GradPartition;
        fsdp3 = fsdp3 || sites.fsdpBackwardGather(stack);
    }
    if (fsdp3) {
        r.cfg.zero = 3;
        r.items.push_back({"zero", "3", "read", "FSDP gathering each layer's parameters again for its backward "
                                                "(_pre_backward_hook / pre_backward) in the stacks: parameters, "
                                                "gradients and optimizer state sharded, ZeRO-3's layout"});
    } else if (deepspeed3 || deepspeed2 || deepspeed1 || megatron) {
        r.cfg.zero = deepspeed3 ? 3 : deepspeed2 ? 2 : 1;
        r.items.push_back({"zero", std::to_string(*r.cfg.zero), "read",
                           deepspeed3 ? "DeepSpeed ZeRO-3's parameter gathers or fp32 partitions in the stacks"
                           : deepspeed2 ? "DeepSpeed's contiguous gradient partition (copy_grads_in_partition) in the "
                                          "stacks: ZeRO-2"
                           : deepspeed1 ? "DeepSpeed's engine reducing the gradients after the backward "
                                          "(allreduce_gradients -> reduce_gradients) in the stacks: ZeRO-1"
                                        : "Megatron's DistributedOptimizer in the stacks: optimizer state and main "
                                          "parameters sharded, ZeRO-1's layout"});
    } else if (zero) {
        r.cfg.zero = 1;
        r.items.push_back({"zero", "1", "read", "ZeroRedundancyOptimizer's step in the stacks: ZeRO stage 1 "
                                                "(each device keeps its share of the optimizer state)"});
    } else if (ddp) {
        r.cfg.zero = 0;
        r.items.push_back({"zero", "0", "read", "DistributedDataParallel's Reducer in the stacks and no sharded "
                                                "optimizer: every device keeps all of the state"});
    }
}

} // namespace

StatedConfig readTraceConfig(const LoadedTrace& trace, size_t deviceIndex, std::vector<MeasuredItem>* how)
{
    Reader r;
    // A recorder's own record of the run comes first: it was given the values, not guessing.
    r.source = kRunConfigSource;
    for (const auto& [key, value] : trace.snapshot.runConfig) {
        if (key == "optimizer") {
            if (auto o = optimizerFromName(value); o && !r.cfg.optimizer) {
                r.cfg.optimizer = o;
                r.items.push_back({"optimizer", std::string(optimizerName(*o)), "read", r.source});
            }
        } else {
            r.scan(key + "=" + value);
        }
    }
    r.source.clear();
    std::set<std::string> seen;
    for (const auto& a : trace.snapshot.annotations)
        if (seen.insert(a.name).second)
            r.scan(a.name);
    if (deviceIndex < trace.snapshot.devices.size()) {
        const auto& dev = trace.snapshot.devices[deviceIndex];
        for (const auto& [idx, id] : dev.trace.userMetadata) {
            std::string s(trace.snapshot.frames.strings().get(id));
            if (seen.insert(s).second)
                r.scan(s);
        }
    }
    for (const auto& name : seen)
        if (auto o = optimizerFromAnnotation(name); o && !r.cfg.optimizer) {
            r.cfg.optimizer = o;
            r.items.push_back({"optimizer", std::string(optimizerName(*o)), "read", "annotation '" + name + "'"});
        }
    readSharding(r, trace.snapshot, deviceIndex);
    if (how)
        *how = r.items;
    return r.cfg;
}

} // namespace headroom
