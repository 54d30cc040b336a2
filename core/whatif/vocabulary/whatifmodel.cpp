// SPDX-License-Identifier: MIT
#include "core/whatif/vocabulary/whatifmodel.h"

#include "core/whatif/vocabulary/batchunits.h"
#include "core/util/units.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace headroom {

namespace {

constexpr double kGiB = double(1ull << 30);

template <typename E, size_t N>
std::optional<E> fromTable(std::string_view s, const std::array<std::string_view, N>& names)
{
    for (size_t i = 0; i < N; ++i)
        if (names[i] == s)
            return static_cast<E>(i);
    return std::nullopt;
}

constexpr std::array<std::string_view, 4> kPrecision = {"fp32", "amp-bf16", "amp-fp16", "bf16"};
constexpr std::array<std::string_view, 6> kOptimizer = {"adamw", "adamw-fused", "adam8bit",
                                                        "adafactor", "sgd", "sgd-momentum"};
constexpr std::array<std::string_view, 3> kOffload = {"none", "optimizer", "params"};

} // namespace

std::string_view checkpointName(Checkpointing c, int everyK)
{
    switch (c) {
    case Checkpointing::None: return "none";
    case Checkpointing::Selective: return "selective";
    case Checkpointing::Full: return "full";
    case Checkpointing::EveryK: {
        static thread_local std::string buf;
        buf = "every:" + std::to_string(everyK);
        return buf;
    }
    }
    return "none";
}

std::string_view precisionName(Precision p) { return kPrecision[size_t(p)]; }
std::string_view optimizerName(OptimizerKind o) { return kOptimizer[size_t(o)]; }
std::string_view offloadName(Offload o) { return kOffload[size_t(o)]; }

std::string_view provenanceName(Provenance p)
{
    static constexpr std::array<std::string_view, 4> k = {"measured", "scaled", "modelled", "default"};
    return k[size_t(p)];
}

std::string_view stepPhaseName(StepPhase p)
{
    static constexpr std::array<std::string_view, 3> k = {"start_of_backward", "backward", "optimizer_step"};
    return k[size_t(p)];
}

std::string_view stepPhaseLabel(StepPhase p)
{
    static constexpr std::array<std::string_view, 3> k = {"start of backward", "end of backward", "optimizer step"};
    return k[size_t(p)];
}

std::string_view Projection::phaseLabel(StepPhase p) const
{
    return forwardOnly && p == StepPhase::StartOfBackward ? std::string_view("forward") : stepPhaseLabel(p);
}

std::string_view verdictName(Verdict v)
{
    static constexpr std::array<std::string_view, 4> k = {"fits", "tight", "does not fit", "unknown capacity"};
    return k[size_t(v)];
}

double marginLeft(double peakHigh, double context, double capacity)
{
    if (capacity <= context)
        return kFitsNoMargin;
    return 1.0 - (peakHigh - context) / (capacity - context);
}

std::optional<double> highEndLimit(double context, double capacity, double margin)
{
    if (capacity <= context)
        return std::nullopt;
    return context + (capacity - context) * (1.0 - margin);
}

std::optional<Precision> precisionFromName(std::string_view s)
{
    if (s == "amp" || s == "bf16-amp")
        return Precision::AmpBf16;
    if (s == "fp16-amp")
        return Precision::AmpFp16;
    return fromTable<Precision>(s, kPrecision);
}

std::optional<OptimizerKind> optimizerFromName(std::string_view s)
{
    if (s == "adam")
        return OptimizerKind::AdamW;
    if (s == "adam-8bit" || s == "adamw8bit")
        return OptimizerKind::Adam8bit;
    return fromTable<OptimizerKind>(s, kOptimizer);
}

std::optional<Offload> offloadFromName(std::string_view s) { return fromTable<Offload>(s, kOffload); }

bool checkpointFromName(std::string_view s, Checkpointing& out, int& everyK)
{
    everyK = 1;
    if (s == "none" || s == "off") { out = Checkpointing::None; return true; }
    if (s == "selective") { out = Checkpointing::Selective; return true; }
    if (s == "full") { out = Checkpointing::Full; return true; }
    if (s.rfind("every:", 0) == 0) {
        auto num = s.substr(6);
        int k = 0;
        auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), k);
        if (ec != std::errc() || p != num.data() + num.size() || k < 1)
            return false;
        out = k == 1 ? Checkpointing::Full : Checkpointing::EveryK;
        everyK = k;
        return true;
    }
    return false;
}

std::vector<std::string> LeverConfig::differences(const LeverConfig& b, int microBatchUnits) const
{
    std::vector<std::string> out;
    auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        return std::string(buf);
    };
    if (microBatch != b.microBatch) out.push_back("micro_batch=" + microBatchText(microBatch, microBatchUnits));
    if (accum != b.accum) out.push_back("accum=" + std::to_string(accum));
    if (seq != b.seq) out.push_back("seq=" + std::to_string(seq));
    if (checkpoint != b.checkpoint || (checkpoint == Checkpointing::EveryK && checkpointEvery != b.checkpointEvery))
        out.push_back("checkpoint=" + std::string(checkpointName(checkpoint, checkpointEvery)));
    if (precision != b.precision) out.push_back("precision=" + std::string(precisionName(precision)));
    if (optimizer != b.optimizer) out.push_back("optimizer=" + std::string(optimizerName(optimizer)));
    if (zero != b.zero) out.push_back("zero=" + std::to_string(zero));
    // 0 is "unknown", which a projection reads as one device: filling it in changes nothing.
    if (std::max(1, devices) != std::max(1, b.devices)) out.push_back("devices=" + std::to_string(devices));
    if (offload != b.offload) out.push_back("offload=" + std::string(offloadName(offload)));
    if (flashAttention != b.flashAttention) out.push_back(flashAttention ? "flash_attn=on" : "flash_attn=off");
    if (trainableFraction != b.trainableFraction) out.push_back("lora_fraction=" + num(trainableFraction));
    if (expandableSegments != b.expandableSegments)
        out.push_back(expandableSegments ? "expandable_segments=on" : "expandable_segments=off");
    return out;
}

StateBytes stateBytes(Precision p, OptimizerKind o)
{
    StateBytes s;
    const bool pure16 = p == Precision::Bf16;
    if (p == Precision::Fp32) { s.weights = 4; s.grads = 4; }
    else if (pure16) { s.weights = 2; s.grads = 2; }
    else { s.weights = 2; s.master = 4; s.grads = 2; } // ZeRO / DeepSpeed accounting
    const double stateWord = pure16 ? 2 : 4;        // optimizer states follow the master dtype
    switch (o) {
    case OptimizerKind::AdamW: s.optimizer = 2 * stateWord; s.optimizerTemp = stateWord; break;
    case OptimizerKind::AdamWFused: s.optimizer = 2 * stateWord; break;
    case OptimizerKind::Adam8bit: s.optimizer = 2; break;
    case OptimizerKind::Adafactor: s.optimizer = 0.05; s.optimizerTemp = stateWord; break;
    case OptimizerKind::Sgd: break;
    case OptimizerKind::SgdMomentum: s.optimizer = stateWord; s.optimizerTemp = stateWord; break;
    }
    return s;
}

double optimizerBytesMoved(Precision p, OptimizerKind o)
{
    const double scale = p == Precision::Bf16 ? 0.5 : 1.0;
    switch (o) {
    case OptimizerKind::AdamW:
    case OptimizerKind::AdamWFused: return 28 * scale;
    case OptimizerKind::Adam8bit: return 16 * scale;
    case OptimizerKind::Adafactor: return 16 * scale;
    case OptimizerKind::Sgd: return 12 * scale;
    case OptimizerKind::SgdMomentum: return 20 * scale;
    }
    return 28;
}

double activationFactor(Precision p) { return p == Precision::Fp32 ? 1.8 : 1.0; }

double attentionScoreBytes(Precision p, int n, bool dropoutMask)
{
    const double m = dropoutMask ? 1.0 : 0.0;
    if (p == Precision::AmpBf16 || p == Precision::AmpFp16)
        return 4.0 * (n - 1) + 2.0 + m + (n == 1 && !dropoutMask ? 4.0 : 0.0);
    return (p == Precision::Fp32 ? 4.0 : 2.0) * n + m;
}

double ModelDims::layerParams() const
{
    if (layers <= 0)
        return params;
    const double embed = 2.0 * double(vocab) * double(hidden);
    return std::max(params - embed, params * 0.5) / layers;
}

double estimateParams(int layers, int hidden, int ffn, int vocab)
{
    const double h = hidden;
    const double perLayer = ffn > 0 ? 4 * h * h + 3 * h * double(ffn) : 12 * h * h;
    return double(layers) * perLayer + double(vocab) * h;
}

std::optional<ModelDims> modelPreset(std::string_view name)
{
    ModelDims d;
    if (name == "gpt2" || name == "gpt2-small") {
        d = {"gpt2", 124.44e6, 12, 768, 12, 3072, 50257, 34.0, 1024, 8};
    } else if (name == "llama2-7b") {
        d = {"llama2-7b", 6.738e9, 32, 4096, 32, 11008, 32000, 34.0, 4096, 4};
    } else if (name == "llama3-8b") {
        d = {"llama3-8b", 8.03e9, 32, 4096, 32, 14336, 128256, 34.0, 8192, 1};
    } else if (name == "llama2-70b" || name == "70b") {
        d = {"llama2-70b", 68.98e9, 80, 8192, 64, 28672, 32000, 34.0, 4096, 1};
    } else {
        return std::nullopt;
    }
    return d;
}

std::vector<std::string> modelPresetNames() { return {"gpt2", "llama2-7b", "llama3-8b", "llama2-70b"}; }

std::optional<DeviceSpec> devicePreset(std::string_view name)
{
    DeviceSpec d;
    auto gib = [](double g) { return int64_t(g * kGiB); };
    if (name == "24gib" || name == "24") d = {"24 GiB (RTX 4090 class)", gib(24), 165e12, 1008e9, 25e9, 25e9, true};
    else if (name == "40gib" || name == "40" || name == "a100-40gb") d = {"40 GiB (A100 40GB)", gib(40), 312e12, 1555e9, 300e9, 25e9, false};
    else if (name == "48gib" || name == "48") d = {"48 GiB (L40S class)", gib(48), 362e12, 864e9, 25e9, 25e9, true};
    else if (name == "80gib" || name == "80" || name == "h100" || name == "h100-80gb") d = {"80 GiB (H100 SXM)", gib(80), 989e12, 3350e9, 450e9, 50e9, false};
    else if (name == "a100-80gb") d = {"80 GiB (A100 SXM)", gib(80), 312e12, 2039e9, 300e9, 25e9, false};
    else if (name == "94gib" || name == "94") d = {"94 GiB (H100 NVL)", gib(94), 835e12, 3900e9, 300e9, 50e9, true};
    else if (name == "141gib" || name == "141" || name == "h200") d = {"141 GiB (H200)", gib(141), 989e12, 4800e9, 450e9, 50e9, false};
    else return std::nullopt;
    return d;
}

std::vector<std::string> devicePresetNames() { return {"24gib", "40gib", "48gib", "80gib", "a100-80gb", "94gib", "141gib"}; }

DeviceSpec deviceForCapacity(int64_t capacityBytes)
{
    if (capacityBytes <= 0) { // judged against nothing: no verdict, the common card's speeds
        DeviceSpec d = *devicePreset("80gib");
        d.capacityBytes = 0;
        d.name = "capacity unknown (" + d.name + " speeds)";
        return d;
    }
    const double g = double(capacityBytes) / kGiB;
    const char* name = g < 32 ? "24gib" : g < 44 ? "40gib" : g < 64 ? "48gib" : g < 88 ? "80gib" : g < 120 ? "94gib" : "141gib";
    DeviceSpec d = *devicePreset(name);
    // A capacity no preset has is named by its size, with the speeds it borrows ("custom" read
    // as a product name).
    if (std::abs(g - double(d.capacityBytes) / kGiB) > 0.5)
        d.name = formatBytes(capacityBytes) + " device (" + d.name + " speeds)";
    d.capacityBytes = capacityBytes;
    return d;
}

const std::vector<WhatIfConstants::Entry>& WhatIfConstants::entries()
{
    using C = WhatIfConstants;
    static const std::vector<Entry> k = {
        {"mfu_max", "MFU max", &C::mfuMax, "", true, "llm-analysis 'up to 0.5'; Korthikanti 54%"},
        {"n_half", "MFU half-saturation", &C::nHalf, "tokens", true, "a guess (docs/whatif-model.md, Constants)"},
        {"logits_bytes", "logits bytes/element (c_V)", &C::logitsBytes, "B", true, "a guess (docs/whatif-model.md, Constants: 4..12)"},
        {"act_coeff_eager", "analytic: eager layers' saved bytes/(s*b*h)", &C::actCoeffEager, "B", true,
         "the CPU matrix's dense eager transformers, 41..79 (tools/activation_coeff.py)"},
        {"overlap", "comm/compute overlap", &C::overlap, "", true, "a guess (docs/whatif-model.md, Constants)"},
        {"hbm_efficiency", "HBM efficiency", &C::hbmEfficiency, "", true, "llm-analysis calls 0.9 aggressive"},
        {"bus_factor", "achievable NVLink fraction", &C::busFactor, "", true, "a guess (docs/whatif-model.md, Constants)"},
        {"host_bandwidth", "host DRAM bandwidth", &C::hostBandwidth, "B/s", true, "a guess (docs/whatif-model.md, Constants)"},
        {"context_bytes", "outside the allocator (C)", &C::contextBytes, "B", true, "PR #86509, HF docs"},
        {"context_high_bytes", "C high end", &C::contextHighBytes, "B", true, "a guess (docs/whatif-model.md, Constants)"},
        {"frag_ratio", "fragmentation / (A+T)", &C::fragRatio, "", true, "a guess (docs/whatif-model.md, Constants)"},
        {"frag_ratio_expandable", "same, expandable segments", &C::fragRatioExpandable, "", true, "a guess (docs/whatif-model.md, Constants)"},
        {"margin_same", "margin, b/k only", &C::marginSame, "", true, "a guess (docs/whatif-model.md, Constants)"},
        {"margin_structural", "margin, structural", &C::marginStructural, "", true, "a guess (docs/whatif-model.md, Constants)"},
        {"fp32_slowdown", "fp32 step-time factor", &C::fp32Slowdown, "x", true, "a guess (docs/whatif-model.md, Constants)"},
        {"flash_speedup", "FlashAttention attention speedup", &C::flashSpeedup, "x", true, "a guess (docs/whatif-model.md, Constants)"},
        {"offload_bucket_elems", "offload gradient bucket", &C::offloadBucketElems, "elements", false,
         "DeepSpeed reduce_bucket_size"},
        {"foreach_time_factor", "foreach optimizer time factor", &C::foreachTimeFactor, "x", true, "a guess (docs/whatif-model.md, Constants: up to 2x)"},
        {"unseen_upcast_share", "fp32 ops a precision replay cannot see", &C::unseenUpcastShare, "", true,
         "CPU matrix llama bf16 (RMSNorm in fp32): +7.0%; nine other families 0.0% (docs/whatif-model.md, Constants)"},
    };
    return k;
}

double Projection::componentAt(StepPhase p, std::string_view name) const
{
    for (const auto& c : phases[size_t(p)].components)
        if (c.name == name)
            return c.bytes;
    return 0;
}

} // namespace headroom
