// SPDX-License-Identifier: MIT
#include "core/whatif/terms/whatiflevers.h"

#include <algorithm>
#include <cmath>

namespace headroom::levers {

namespace {

void widen(Term& t, double relErr, Provenance p = Provenance::Scaled)
{
    t.relErr = std::max(t.relErr, relErr);
    if (t.provenance == Provenance::Measured)
        t.provenance = p;
}

void scale(Term& t, double f, double relErr)
{
    if (f == 1.0)
        return;
    t.bytes *= f;
    widen(t, relErr);
}

/// A no_grad forward's temporaries under CUDA autocast: the attention scores among them at
/// their read factor (scoresautocast.h, the highest reading), the rest at the activations'
/// `af` (30% each side).
void scaleScoresApart(Term& t, double af, const ScoresAutocast& sc)
{
    const double rest = t.bytes * (1.0 - sc.tempsShare), scores = t.bytes * sc.tempsShare;
    const double central = rest * af + scores * sc.temps;
    const double low = rest * af * 0.7 + scores * sc.tempsLow, high = rest * af * 1.3 + scores * sc.temps;
    t.bytes = central;
    widen(t, (central - low) / central);
    t.relErrHigh = std::max(t.relErrHigh, (high - central) / central);
}

/// P, recovered from the weights when the state does not know it.
double paramsOf(const WhatIfState& s)
{
    if (s.params > 0)
        return s.params;
    const StateBytes t = s.table(s.config.precision, s.config.optimizer);
    return t.weights + t.master > 0 ? s.weights.bytes / (t.weights + t.master) : 0;
}

/// A no_grad forward's autocast cache where the autocast run peaks: the casts of the weights
/// used by the measured peak, or, where a later use held less above the forward's start by
/// more than the casts made since, what that later moment adds over the peak's transients
/// (`casts` is every weight's 16-bit cast; the terms keep the peak's transients as they are).
double noGradCache(const WhatIfState& s, double casts, double used)
{
    const double transients = s.actLin.bytes + s.actQuad.bytes + s.actSmall.bytes + s.logits.bytes;
    double cache = casts * used;
    for (const auto& m : s.forwardMoments)
        cache = std::max(cache, casts * m.share - transients * (1.0 - m.transient));
    return cache;
}

} // namespace

WhatIfState withPrecision(WhatIfState s, Precision p)
{
    const Precision p0 = s.config.precision;
    if (p == p0)
        return s;
    const double P = paramsOf(s);
    const double Pt = P * s.config.trainableFraction;
    const StateBytes t0 = s.table(p0, s.config.optimizer), t1 = s.table(p, s.config.optimizer);
    const int shard = std::max(1, s.config.devices);
    // Re-price only what is on the device: sharded and offloaded parts keep their ratio.
    auto reprice = [&](Term& term, double before, double after) {
        if (before > 0)
            term.bytes *= after / before;
        else
            term.bytes = after * Pt / (s.config.zero >= 1 ? shard : 1);
        widen(term, 0.05);
        term.provenance = s.calibrated ? Provenance::Scaled : Provenance::Modelled;
    };
    reprice(s.weights, t0.weights, t1.weights);
    if (t0.master > 0 || s.config.offload == Offload::None)
        reprice(s.master, t0.master, t1.master);
    reprice(s.grads, t0.grads, t1.grads);
    reprice(s.optimizer, t0.optimizer, t1.optimizer);
    reprice(s.optTemp, t0.optimizerTemp, t1.optimizerTemp);
    const double af = activationFactor(p) / activationFactor(p0);
    // activationFactor is a guess [G] (fp32 stores 1.8x 16-bit): pure bf16 halves every saved
    // tensor (2.0x); what autocast keeps in fp32 depends on the model and the device. What the
    // forward saves (saved_tensors_hooks, tests/data/cpu/autocast_saved_dtypes.py) shrinks by
    // 1.9x for the CPU matrix's transformers (softmax and the loss's inputs stay fp32) and by
    // 2.0x for its convnet (CPU autocast runs batch norm and ReLU in the convolutions' bf16);
    // a GPU LM's linear activations by 1.4x (CUDA autocast keeps layer_norm and softmax in
    // fp32). One factor cannot follow that, so the ratio is known to about 30%.
    scale(s.actLin, af, 0.30);
    // The attention scores follow the device's autocast op lists. CUDA autocast runs softmax
    // in fp32: per score, softmax's fp32 output (4 B), the dropout mask (1 B) and the 16-bit
    // cast the next matmul saves (2 B) are 7 B against fp32's 9 B, a 1.3x shrink where the
    // linear activations shrink 1.8x (without attention dropout it is 6 B against 4 B; the
    // term's band covers neither). CPU autocast (1.13) narrows softmax with the matmuls, so
    // its scores shrink like the rest.
    auto quadFactor = [&](Precision x) {
        const bool amp = x == Precision::AmpBf16 || x == Precision::AmpFp16;
        return attentionScoreBytes(amp && s.cpuAutocast ? Precision::Bf16 : x, 2, true);
    };
    // Where the calibration read how many score-sized tensors each call saves and whether a
    // dropout mask is among them (scoresautocast.h), that reading replaces the 7/9.
    const ScoresAutocast& sc = s.scoresAutocast;
    const bool cudaFromFp32 = !s.cpuAutocast && p0 == Precision::Fp32 &&
                              (p == Precision::AmpBf16 || p == Precision::AmpFp16);
    if (cudaFromFp32 && sc.saved > 0)
        scale(s.actQuad, sc.saved, 0.10);
    else
        scale(s.actQuad, quadFactor(p) / quadFactor(p0), 0.30);
    // Batch-sized temporaries (logits, the loss's log-probabilities, their gradients) stay
    // fp32 under autocast, which computes the loss in fp32; only pure 16-bit halves them.
    const bool pure0 = p0 == Precision::Bf16, pure1 = p == Precision::Bf16;
    if (pure0 != pure1)
        for (Term* t : {&s.logits, &s.bwdTemp, &s.optAct})
            scale(*t, pure1 ? 0.5 : 2.0, 0.20);
    // A forward under no_grad saves nothing (a forward-only trace without saved activations):
    // its batch-sized temporaries are the layers' outputs, which autocast computes in 16 bits
    // like a training step's saved activations. Written from the CPU decoder_infer alone.
    const bool gradOff = s.forwardOnly && s.actLin.bytes + s.actQuad.bytes + s.actSmall.bytes < 0.01 * s.logits.bytes;
    const bool ampMove = (p0 == Precision::AmpBf16 || p0 == Precision::AmpFp16) !=
                         (p == Precision::AmpBf16 || p == Precision::AmpFp16);
    if (gradOff && pure0 == pure1 && ampMove && cudaFromFp32 && sc.temps > 0 && sc.tempsShare > 0)
        scaleScoresApart(s.logits, af, sc);
    else if (gradOff && pure0 == pure1 && ampMove)
        scale(s.logits, af, 0.30);
    // The gradients of the network's activations among them take their tensors' dtype
    // (autograd allocates a gradient like its tensor), and which tensors autocast narrows
    // depends on the op and the device: CPU autocast runs a convnet's convolutions, batch norm
    // and ReLU in bf16 (the CPU matrix's convnet keeps 16 KiB of activation gradients at its
    // autocast peak against 96 KiB in fp32), CUDA autocast keeps softmax, exp and layer_norm
    // in fp32 and so their gradients (a real snapshot's 3 GiB of attention-score gradients
    // would be halved wrongly). The fp32 trace cannot tell which, so they keep their size and
    // the band reaches down to narrowing them like the saved activations.
    const bool amp0 = p0 == Precision::AmpBf16 || p0 == Precision::AmpFp16;
    const bool amp1 = p == Precision::AmpBf16 || p == Precision::AmpFp16;
    if (pure0 == pure1 && amp0 != amp1 && s.logitsGradShare > 0)
        widen(s.logits, s.logitsGradShare * std::abs(1.0 - af));
    if (s.torchAutocast) {
        // A cast is saved for backward by the op that used it and freed with the rest of
        // that op's saved tensors when its backward runs, as its weight's gradient appears.
        // A reading inside the backward holds the casts of the layers not yet reached only
        // (the share of the gradients this backward had not yet allocated): a small convnet,
        // read with 72% of its gradients allocated, kept 40 KiB of its 87 KiB of casts there
        // under autocast.
        // A forward under no_grad holds the casts of the weights it has used by its peak:
        // autocast caches the cast of a weight that requires grad whether grad is on or off
        // (autocastcache.h; the CPU decoder_infer's autocast peak holds those of its first
        // block and the next qkv). The share of the layers' calls made by the peak where
        // torch's layers show it, else half; from none (weights frozen, nothing cached) to
        // twice that.
        const double ahead = 1.0 - std::clamp(s.backwardDone, 0.0, 1.0);
        const double used = s.forwardWeightUses >= 0 ? s.forwardWeightUses : 0.5;
        s.autocastCache.bytes = amp1 ? (gradOff ? noGradCache(s, 2.0 * P, used) : 2.0 * P * ahead) : 0.0;
        // Under no_grad the cache only grows through the forward, so the autocast run may peak
        // later than the measured one, holding every weight's cast: the band reaches that (CPU
        // forwards with optimizer state from before the trace peaked at their forward's end
        // with 5.62 MiB of casts against the 2.67 MiB of the fp32 peak's share).
        const double share = P > 0 && gradOff ? s.autocastCache.bytes / (2.0 * P) : used;
        s.autocastCache.relErr = gradOff ? std::max(1.0, 1.0 / std::max(share, 0.05) - 1.0) : 0.2;
        s.autocastCache.provenance = Provenance::Modelled;
    }
    s.config.precision = p;
    s.structural = true;
    return s;
}

WhatIfState withOptimizer(WhatIfState s, OptimizerKind o)
{
    const OptimizerKind o0 = s.config.optimizer;
    if (o == o0)
        return s;
    const StateBytes t0 = s.table(s.config.precision, o0), t1 = s.table(s.config.precision, o);
    const double Pt = paramsOf(s) * s.config.trainableFraction;
    const double shard = s.config.zero >= 1 ? std::max(1, s.config.devices) : 1;
    const bool offloaded = s.config.offload != Offload::None;
    if (!offloaded) {
        if (t0.optimizer > 0)
            s.optimizer.bytes *= t1.optimizer / t0.optimizer;
        else
            s.optimizer.bytes = Pt * t1.optimizer / shard;
        widen(s.optimizer, 0.05);
        if (t0.optimizerTemp > 0)
            s.optTemp.bytes *= t1.optimizerTemp / t0.optimizerTemp;
        else
            s.optTemp.bytes = Pt * t1.optimizerTemp / shard;
        s.optTemp.relErr = std::max(s.optTemp.relErr, 0.25);
    }
    s.config.optimizer = o;
    // A fused kernel of the same algorithm leaves every other allocation as it was.
    if (!(o0 == OptimizerKind::AdamW && o == OptimizerKind::AdamWFused))
        s.structural = true;
    return s;
}

WhatIfState withTrainableFraction(WhatIfState s, double f)
{
    f = std::clamp(f, 1e-6, 1.0);
    const double f0 = s.config.trainableFraction;
    if (f == f0)
        return s;
    const double r = f / f0;
    for (Term* t : {&s.master, &s.grads, &s.optimizer, &s.optTemp})
        scale(*t, r, 0.05);
    // LoRA adapters are new weights of the trainable size (r*(d_in+d_out) per matrix).
    const StateBytes t = s.table(s.config.precision, s.config.optimizer);
    const double adapters = (f < 1.0 ? f : 0.0) - (f0 < 1.0 ? f0 : 0.0);
    s.weights.bytes += paramsOf(s) * adapters * t.weights;
    s.config.trainableFraction = f;
    s.structural = true;
    return s;
}

WhatIfState withShape(WhatIfState s, int b, int k, int seq)
{
    k = std::max(1, k);
    // 0 = unknown (a calibration that did not learn it): unchanged.
    const double rb = double(std::max(1, b)) / std::max(1, s.config.microBatch);
    const double rs = double(std::max(1, seq)) / std::max(1, s.config.seq);
    // The uncertainty of a scaled term grows with how far it is scaled (5% / 10% at a
    // small step): on the CPU matrix the start of backward's activations scale within 5% at
    // twice or half the batch but are off by 10-15% of the peak at four to sixteen times the
    // tokens, where parts that do not scale linearly (per-layer constants, tensors at the
    // allocator's 512-byte minimum, an LSTM's per-step state) show.
    const double r = rb * rs;
    const double err = (rs != 1.0 ? 0.10 : 0.05) + 0.08 * std::abs(std::log(r));
    scale(s.actLin, r, err);
    scale(s.actQuad, r * rs, err);
    // Tensors in the smallest block grow with the batch only once their true size, somewhere
    // below 512 bytes, passes it: taken at half the block (growth from twice the batch), with
    // no growth and full growth as the band's ends.
    scale(s.actSmall, rs * std::max(1.0, rb / 2), rb > 1 ? std::max(err, 0.5) : err);
    for (Term* t : {&s.logits, &s.bwdTemp, &s.optAct})
        scale(*t, r, err);
    // Temporaries below 1 MiB are read as constant (workspaces, scalars); on a small model the
    // logits and their gradient are among them and scale with the batch: the band spans both
    // readings (the term unchanged, or scaled with the tokens).
    if (r != 1.0 && s.constTemp.bytes > 0)
        widen(s.constTemp, std::min(1.0, std::abs(r - 1.0)));
    // Accumulation: from the second micro-step on, the backward's incoming gradients are alive
    // next to the accumulated .grad while they are added, which the gradient term does not
    // count (the convnet's step peaks a quarter of a gradient above its forward/backward
    // boundary with every gradient alive).
    if (k > 1 && std::max(1, s.config.accum) == 1)
        widen(s.grads, 0.5);
    s.config.microBatch = b;
    s.config.accum = k;
    s.config.seq = seq;
    return s;
}

WhatIfState withFlashAttention(WhatIfState s, bool on)
{
    if (on == s.config.flashAttention)
        return s;
    if (!on && s.actQuad.bytes <= 0 && s.dims.valid()) {
        // The trace was measured with fused attention: model the scores it would materialise.
        const double b = s.config.microBatch, sq = s.config.seq;
        s.actQuad = {s.layers * 5.0 * s.dims.heads * sq * sq * b * activationFactor(s.config.precision), 0.20,
                     Provenance::Modelled};
    } else if (!on && s.actQuad.bytes <= 0) {
        s.notes.push_back("FlashAttention off: the trace has no attention scores to scale and no head count "
                          "is known, so the scores are not counted; the model's head count settles it");
    }
    s.config.flashAttention = on;
    s.structural = true;
    widen(s.actLin, 0.20);
    return s;
}

WhatIfState withCheckpointing(WhatIfState s, Checkpointing c, int everyK)
{
    if (c == Checkpointing::EveryK && everyK <= 1)
        c = Checkpointing::Full;
    if (c == s.config.checkpoint && (c != Checkpointing::EveryK || everyK == s.config.checkpointEvery))
        return s;
    s.config.checkpoint = c;
    s.config.checkpointEvery = c == Checkpointing::EveryK ? everyK : 1;
    if (c != Checkpointing::None) {
        s.structural = true;
        widen(s.actLin, 0.20);
        widen(s.actQuad, 0.20);
    }
    return s;
}

WhatIfState withSharding(WhatIfState s, int zero, int devices)
{
    zero = std::clamp(zero, 0, 3);
    devices = std::max(1, devices);
    const int z0 = s.config.zero;
    const double n0 = std::max(1, s.config.devices), n1 = devices;
    if (zero == z0 && devices == s.config.devices)
        return s;
    auto reshard = [&](Term& t, int stage) {
        const double f = (z0 >= stage ? n0 : 1.0) / (zero >= stage ? n1 : 1.0);
        if (f != 1.0) {
            t.bytes *= f;
            widen(t, 0.02, Provenance::Modelled);
        }
    };
    if (s.config.offload == Offload::None) {
        reshard(s.master, 1);
        reshard(s.optimizer, 1);
        reshard(s.optTemp, 1);
    }
    reshard(s.grads, 2);
    if (s.config.offload != Offload::Params)
        reshard(s.weights, 3);
    const StateBytes t = s.table(s.config.precision, s.config.optimizer);
    const double layerParams = s.dims.valid() ? s.dims.layerParams() : paramsOf(s) / std::max(1, s.layers);
    const bool gathers = zero == 3 || s.config.offload == Offload::Params;
    // A measured run's gathers stay as measured: the layer gathered is whole at any world size.
    if (gathers && !(z0 == 3 && s.gather.provenance == Provenance::Measured))
        s.gather = {layerParams * (t.weights + t.grads), 0.25, Provenance::Modelled}; // DeepSpeed 4*largest layer
    else if (!gathers)
        s.gather = {};
    s.config.zero = zero;
    s.config.devices = devices;
    if (zero > 0)
        s.structural = true;
    return s;
}

WhatIfState withOffload(WhatIfState s, Offload o, const WhatIfConstants& k)
{
    const Offload o0 = s.config.offload;
    if (o == o0)
        return s;
    const StateBytes t = s.table(s.config.precision, s.config.optimizer);
    const double Pt = paramsOf(s) * s.config.trainableFraction;
    const double shard = std::max(1, s.config.devices);
    if (o0 == Offload::None) {
        s.master = {0, 0, Provenance::Modelled};
        s.optimizer = {0, 0, Provenance::Modelled};
        s.optTemp = {0, 0, Provenance::Modelled};
        // Gradients stream to the host through a reduce bucket (DeepSpeed reduce_bucket_size).
        s.grads = {std::min(s.grads.bytes, k.offloadBucketElems * t.grads), 0.25, Provenance::Modelled};
    } else if (o == Offload::None) {
        const double sh1 = s.config.zero >= 1 ? shard : 1, sh2 = s.config.zero >= 2 ? shard : 1;
        s.master = {Pt * t.master / sh1, 0.05, Provenance::Modelled};
        s.optimizer = {Pt * t.optimizer / sh1, 0.05, Provenance::Modelled};
        s.optTemp = {Pt * t.optimizerTemp / sh1, 0.25, Provenance::Modelled};
        s.grads = {Pt * t.grads / sh2, 0.05, Provenance::Modelled};
    }
    const double layerParams = s.dims.valid() ? s.dims.layerParams() : paramsOf(s) / std::max(1, s.layers);
    if (o == Offload::Params) {
        s.weights = {0, 0, Provenance::Modelled};
        if (s.gather.provenance != Provenance::Measured)
            s.gather = {layerParams * (t.weights + t.grads), 0.25, Provenance::Modelled};
    } else if (o0 == Offload::Params) {
        s.weights = {paramsOf(s) * t.weights / (s.config.zero == 3 ? shard : 1), 0.05, Provenance::Modelled};
        if (s.config.zero != 3)
            s.gather = {};
    }
    s.config.offload = o;
    s.structural = true;
    return s;
}

WhatIfState withExpandableSegments(WhatIfState s, bool on, const WhatIfConstants& k)
{
    if (on == s.config.expandableSegments)
        return s;
    if (on)
        s.fragRatio = std::min(s.fragRatio, k.fragRatioExpandable);
    else
        s.fragRatio = std::max(s.fragRatio, k.fragRatio);
    s.fragProvenance = Provenance::Default;
    s.config.expandableSegments = on;
    return s;
}

WhatIfState applyAll(const WhatIfState& base, const LeverConfig& c, const WhatIfConstants& k)
{
    WhatIfState s = withPrecision(base, c.precision);
    s = withOptimizer(std::move(s), c.optimizer);
    s = withTrainableFraction(std::move(s), c.trainableFraction);
    s = withShape(std::move(s), c.microBatch, c.accum, c.seq);
    s = withFlashAttention(std::move(s), c.flashAttention);
    s = withCheckpointing(std::move(s), c.checkpoint, c.checkpointEvery);
    s = withSharding(std::move(s), c.zero, c.devices);
    s = withOffload(std::move(s), c.offload, k);
    s = withExpandableSegments(std::move(s), c.expandableSegments, k);
    return s;
}

} // namespace headroom::levers
