// SPDX-License-Identifier: MIT
#include "core/whatif/projection/whatifprojection.h"

#include "core/util/units.h"
#include "core/whatif/replay/replayprojection.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/terms/whatiflevers.h"

#include <algorithm>
#include <optional>
#include <cmath>
#include <cstdio>

namespace headroom {

namespace {

constexpr double kMiB = double(1ull << 20);
constexpr double kGiB = double(1ull << 30);

void add(PhaseProjection& ph, const char* name, const Term& t)
{
    if (t.bytes <= 0)
        return;
    Component c;
    c.name = name;
    c.bytes = t.bytes;
    c.relErr = t.relErr;
    c.relErrHigh = t.relErrHigh;
    c.provenance = t.provenance;
    ph.components.push_back(std::move(c));
}

double mfu(const WhatIfConstants& k, double tokens)
{
    return k.mfuMax * tokens / (tokens + k.nHalf);
}

/// Compute items of one configuration before calibration to a measured time.
struct ComputeModel {
    double flopsNonRecompute = 0; ///< per step, all micro-steps, attention at its effective cost
    double flopsRecompute = 0;
    double tokensMicro = 1;
};

/// Sequences per micro-batch: a count, or in ratios of the measured run (batchratio.h), whose
/// micro-batch, unknown, counts as one as it does in the measured units; so the panel's ratio
/// and the command line's count give the run as recorded the same time and tokens.
double microBatchCount(const WhatIfState& s)
{
    if (s.microBatchUnits > 0)
        return double(std::max(1, s.config.microBatch)) / s.microBatchUnits;
    return double(std::max(1, s.config.microBatch));
}

ComputeModel computeModel(const WhatIfState& s, const WhatIfConstants& k)
{
    const LeverConfig& c = s.config;
    double P = s.params;
    if (P <= 0) {
        const StateBytes t = s.table(c.precision, c.optimizer);
        P = s.weights.bytes * (c.zero == 3 ? c.devices : 1) / std::max(1.0, t.weights + t.master);
    }
    const double Pt = P * c.trainableFraction;
    const double L = s.dims.valid() ? s.dims.layers : 0, h = s.dims.valid() ? s.dims.hidden : 0;
    const double sq = std::max(1, c.seq), n = microBatchCount(s) * sq;
    const double dense = c.trainableFraction < 1.0 ? 4 * P + 6 * Pt : 6 * P; // 4P + 6Pt when frozen
    double attn = 12 * L * h * sq;
    if (!c.flashAttention)
        attn *= k.flashSpeedup;
    double r = 0;
    if (c.checkpoint == Checkpointing::Full)
        r = 1;
    else if (c.checkpoint == Checkpointing::EveryK && s.layers > 0)
        r = std::ceil(double(s.layers) / c.checkpointEvery) / s.layers;
    double rec = r * (2 * P + 4 * L * h * sq);
    if (c.checkpoint == Checkpointing::Selective && !c.flashAttention)
        rec = 4 * L * h * sq; // recompute the attention core only
    ComputeModel m;
    m.tokensMicro = n;
    m.flopsNonRecompute = c.accum * n * (dense + attn);
    m.flopsRecompute = c.accum * n * rec;
    return m;
}

} // namespace

StateBytes WhatIfState::table(Precision p, OptimizerKind o) const
{
    StateBytes t = stateBytes(p, o);
    if (torchAutocast && (p == Precision::AmpBf16 || p == Precision::AmpFp16)) {
        t.weights = 4; // fp32 parameters are the master copy
        t.master = 0;
        t.grads = 4;
    }
    return t;
}

/// How an attention call may be written, for the analytic mode's scores (the same readings the
/// calibration takes from a trace, scoresautocast.h): a softmax alone, a softmax and a dropout,
/// a softmax of the model's own (an exp and its division, and what they are taken of).
enum class ScoresLayout { SoftmaxOnly, SoftmaxDropout, OwnSoftmax };

double scoreBytes(Precision p, ScoresLayout l)
{
    const int n = l == ScoresLayout::SoftmaxOnly ? 1 : l == ScoresLayout::SoftmaxDropout ? 2 : 3;
    return attentionScoreBytes(p, n, l == ScoresLayout::SoftmaxDropout);
}

WhatIfBaseline analyticBaseline(const ModelDims& dims, const LeverConfig& config, const WhatIfConstants& k)
{
    WhatIfBaseline s;
    s.config = config;
    s.config.zero = 0;
    s.config.devices = 1;
    s.config.offload = Offload::None;
    s.config.checkpoint = Checkpointing::None;
    s.config.checkpointEvery = 1;
    s.config.trainableFraction = 1.0;
    s.dims = dims;
    s.params = dims.params;
    s.layers = dims.layers;
    const double P = dims.params;
    const StateBytes t = stateBytes(config.precision, config.optimizer);
    const double err = 0.02;
    s.weights = {P * t.weights, err, Provenance::Modelled};
    s.master = {P * t.master, err, Provenance::Modelled};
    s.grads = {P * t.grads, err, Provenance::Modelled};
    s.optimizer = {P * t.optimizer, err, Provenance::Modelled};
    s.optTemp = {P * t.optimizerTemp, 0.25, Provenance::Modelled};
    const double b = config.microBatch, sq = config.seq, h = dims.hidden;
    const double af = activationFactor(config.precision);
    s.actLin = {dims.layers * sq * b * h * dims.actCoeff * af, 0.20, Provenance::Modelled};
    // Korthikanti et al.'s layout (softmax, dropout mask, dropout output), at the start's
    // precision as the terms' levers price it (9 B in fp32, 7 B under CUDA autocast, 5 B in bf16).
    const double perScore = scoreBytes(config.precision, ScoresLayout::SoftmaxDropout);
    s.actQuad = {dims.layers * perScore * dims.heads * sq * sq * b, 0.20, Provenance::Modelled};
    s.logits = {k.logitsBytes * b * sq * dims.vocab, 0.5, Provenance::Default}; // c_V 4..12
    s.fragRatio = config.expandableSegments ? k.fragRatioExpandable : k.fragRatio;
    s.context = k.contextBytes;
    s.contextHigh = k.contextHighBytes;
    s.structural = true; // architecture-only estimate
    return s;
}

double storedActivations(const WhatIfState& s, double* linOut, double* quadOut)
{
    const LeverConfig& c = s.config;
    double lin = s.actLin.bytes + s.actSmall.bytes + s.autocastCache.bytes;
    double quad = c.flashAttention ? 0.0 : s.actQuad.bytes;
    const double L = std::max(1, s.layers);
    if (c.checkpoint == Checkpointing::Selective) {
        quad = 0;
    } else if (c.checkpoint == Checkpointing::Full || c.checkpoint == Checkpointing::EveryK) {
        const double nc = c.checkpoint == Checkpointing::Full ? L : std::ceil(L / std::max(1, c.checkpointEvery));
        const double coeff = s.dims.actCoeff > 0 ? s.dims.actCoeff : 34.0;
        const double boundary = s.actLin.bytes / L * 2.0 / coeff; // the 2sbh layer input
        const double keep = (L - nc + 1) / L;                    // un-checkpointed layers + the one recomputed
        const double stored = nc * boundary + (lin + quad) * keep;
        if (stored < lin + quad) {
            quad *= keep;
            lin = stored - quad;
        }
    }
    if (linOut)
        *linOut = lin;
    if (quadOut)
        *quadOut = quad;
    return lin + quad;
}

namespace {

/// The modelled items before calibration to a measured time.
StepTime rawStepTime(const WhatIfState& s, const WhatIfBaseline& base, const WhatIfConstants& k, const DeviceSpec& dev)
{
    const LeverConfig& c = s.config;
    const ComputeModel m = computeModel(s, k), mb = computeModel(base, k);
    const double precisionFactor = c.precision == Precision::Fp32 ? k.fp32Slowdown : 1.0;
    const double peak = dev.peakFlops;
    const double mfuRef = mfu(k, mb.tokensMicro), mfuNow = mfu(k, m.tokensMicro);
    StepTime t;
    t.compute = m.flopsNonRecompute / (peak * mfuRef) * precisionFactor;
    // A micro-batch in ratios has no absolute size for the utilisation curve to read.
    if (s.microBatchUnits <= 0)
        t.utilisation = m.flopsNonRecompute / peak * (1 / mfuNow - 1 / mfuRef) * precisionFactor;
    t.recompute = m.flopsRecompute / (peak * mfuNow) * precisionFactor;

    double P = s.params > 0 ? s.params : 0;
    const double Pt = P * c.trainableFraction;
    const StateBytes tb = s.table(c.precision, c.optimizer);
    const double n = std::max(1, c.devices);
    // Optimizer step: memory bound, on the device's shard; on the host when offloaded.
    if (c.offload == Offload::None) {
        const double factor = c.optimizer == OptimizerKind::AdamW || c.optimizer == OptimizerKind::Adafactor ||
                                      c.optimizer == OptimizerKind::SgdMomentum
                                  ? k.foreachTimeFactor
                                  : 1.0;
        t.optimizer = Pt / (c.zero >= 1 ? n : 1) * optimizerBytesMoved(c.precision, c.optimizer) * factor /
                      (dev.hbmBandwidth * k.hbmEfficiency);
    }
    // Communication: ring collectives at the achievable bus bandwidth.
    if (n > 1) {
        const double bw = dev.linkBandwidth * k.busFactor, ring = (n - 1) / n;
        const double grad = Pt * tb.grads, param = P * tb.weights;
        double raw = 0;
        if (c.zero <= 1)
            raw = 2 * grad * ring / bw;
        else if (c.zero == 2)
            raw = (c.accum + 1) * grad * ring / bw;
        else
            raw = 3.0 * c.accum * param * ring / bw;
        t.communication = (1 - k.overlap) * raw;
    }
    // Offload: PCIe transfers half hidden, the CPU Adam step exposed.
    if (c.offload != Offload::None) {
        const double pcie = 4 * Pt / dev.pcieBandwidth, cpu = 30 * Pt / k.hostBandwidth;
        t.offload = 0.5 * pcie + cpu;
        if (c.offload == Offload::Params)
            t.offload += 0.5 * 2.0 * c.accum * P * tb.weights / dev.pcieBandwidth;
        t.offload /= (c.zero >= 1 ? n : 1);
    }
    return t;
}

} // namespace

StepTime stepTime(const WhatIfState& s, const WhatIfBaseline& base, const WhatIfConstants& k, const DeviceSpec& dev)
{
    const LeverConfig& c = s.config;
    StepTime t = rawStepTime(s, base, k, dev);
    const double n = std::max(1, c.devices);
    // Calibrated: scale the compute items so that the baseline reproduces the measured time.
    if (base.measuredStepTime > 0) {
        const StepTime b0 = rawStepTime(base, base, k, dev);
        const double modelled = b0.compute + b0.utilisation + b0.recompute;
        const double measuredCompute = base.measuredStepTime - b0.optimizer - b0.communication - b0.offload;
        if (modelled > 0 && measuredCompute > 0) {
            const double f = measuredCompute / modelled;
            t.compute *= f;
            t.utilisation *= f;
            t.recompute *= f;
        }
    }
    t.total = t.compute + t.utilisation + t.recompute + t.communication + t.offload + t.optimizer;
    t.tokensPerStep = double(c.accum) * microBatchCount(s) * std::max(1, c.seq) * n;
    t.tokensPerSecond = t.total > 0 ? t.tokensPerStep / t.total : 0;
    t.known = !base.calibrated || base.measuredStepTime > 0;
    return t;
}

namespace {

/// The peak and its band: the highest phase.
void aggregate(Projection& pr)
{
    pr.peakPhase = StepPhase::StartOfBackward;
    pr.peak = pr.peakLow = pr.peakHigh = 0;
    pr.peakAllocated = pr.peakAllocatedLow = pr.peakAllocatedHigh = 0;
    for (size_t i = 0; i < kStepPhaseCount; ++i) {
        const auto& ph = pr.phases[i];
        if (!ph.present)
            continue;
        if (ph.total >= pr.phases[size_t(pr.peakPhase)].total)
            pr.peakPhase = StepPhase(i);
        pr.peak = std::max(pr.peak, ph.total);
        pr.peakLow = std::max(pr.peakLow, ph.low);
        pr.peakHigh = std::max(pr.peakHigh, ph.high);
        pr.peakAllocated = std::max(pr.peakAllocated, ph.allocated);
        pr.peakAllocatedLow = std::max(pr.peakAllocatedLow, ph.allocatedLow);
        pr.peakAllocatedHigh = std::max(pr.peakAllocatedHigh, ph.allocatedHigh);
    }
    pr.termsPeak = pr.peak;
    pr.termsPeakAllocated = pr.peakAllocated;
    pr.termsPeakPhase = pr.peakPhase;
}

/// The verdict from the band: fits when the high estimate leaves the margin free.
void judge(Projection& pr, double contextHigh)
{
    pr.verdict = Verdict::Unknown;
    pr.judgedContext = contextHigh;
    pr.marginLeft = marginLeft(pr.peakHigh, contextHigh, pr.capacity);
    if (pr.capacity > 0) {
        if (pr.marginLeft >= pr.margin)
            pr.verdict = Verdict::Fits;
        else if (pr.peak <= pr.capacity)
            pr.verdict = Verdict::Tight;
        else
            pr.verdict = Verdict::DoesNotFit;
    }
    pr.fits = pr.verdict == Verdict::Fits;
}

/// Widens `pr`'s band to hold `other`, the same projection under another reading of the
/// measured run.
void fold(Projection& pr, const Projection& other)
{
    pr.peakLow = std::min(pr.peakLow, other.peakLow);
    pr.peakHigh = std::max(pr.peakHigh, other.peakHigh);
    pr.peakAllocatedLow = std::min(pr.peakAllocatedLow, other.peakAllocatedLow);
    pr.peakAllocatedHigh = std::max(pr.peakAllocatedHigh, other.peakAllocatedHigh);
    for (size_t i = 0; i < kStepPhaseCount; ++i) {
        PhaseProjection& ph = pr.phases[i];
        const PhaseProjection& o = other.phases[i];
        if (!ph.present || !o.present)
            continue;
        ph.low = std::min(ph.low, o.low);
        ph.high = std::max(ph.high, o.high);
        ph.allocatedLow = std::min(ph.allocatedLow, o.allocatedLow);
        ph.allocatedHigh = std::max(ph.allocatedHigh, o.allocatedHigh);
    }
}

/// The target GPU's cuBLAS workspaces a recording made off it cannot show, one per thread
/// that has run a matmul by this phase; outside the tensors' sum, so an allocated peak stays
/// what the recording can be checked against.
void addWorkspaces(PhaseProjection& ph, const WhatIfState& s, int threads)
{
    if (s.workspaceEach <= 0)
        return;
    const Component w{"cublas_workspaces", threads * s.workspaceEach, 0, Provenance::Modelled,
                      threads * s.workspaceEach, threads * std::max(s.workspaceEach, s.workspaceEachHigh)};
    ph.components.push_back(w);
    ph.total += w.bytes;
    ph.low += w.low;
    ph.high += w.high;
}

} // namespace

Projection evaluate(const WhatIfState& s, const WhatIfBaseline& base, const WhatIfConstants& k, const DeviceSpec& dev)
{
    Projection pr;
    pr.config = s.config;
    pr.microBatchUnits = s.microBatchUnits;
    pr.forwardOnly = base.forwardOnly;
    const LeverConfig& c = s.config;
    double lin = 0, quad = 0;
    storedActivations(s, &lin, &quad);
    const double linStored = s.actLin.bytes + s.actSmall.bytes + s.autocastCache.bytes;
    const double linScale = linStored > 0 ? lin / linStored : 0;
    Term aLin = s.actLin, aQuad = s.actQuad, cache = s.autocastCache;
    aLin.bytes = (s.actLin.bytes + s.actSmall.bytes) * linScale; // one component: small ones are linear activations too
    cache.bytes *= linScale;
    aQuad.bytes = quad;
    Term gFwd = s.grads;
    gFwd.bytes = c.accum > 1 ? s.grads.bytes : s.grads.bytes * s.gradFwdFraction;

    for (size_t i = 0; i < kStepPhaseCount; ++i) {
        PhaseProjection& ph = pr.phases[i];
        ph.phase = StepPhase(i);
        ph.measured = s.measuredAllocated[i];
        ph.measuredEvent = s.measuredEvents[i];
        ph.measuredEventPhase = s.measuredEventPhases[i];
        if (s.forwardOnly && i != 0) {
            ph.present = false;
            continue;
        }
        add(ph, "weights", s.weights);
        add(ph, "master", s.master);
        add(ph, "optimizer_state", s.optimizer);
        double transient = 0;
        if (i == 0) {
            add(ph, "gradients", gFwd);
            add(ph, "activations_linear", aLin);
            add(ph, "activations_attention", aQuad);
            add(ph, "autocast_cache", cache);
            add(ph, "temporaries_batch", s.logits);
            transient = aLin.bytes + aQuad.bytes + cache.bytes + s.logits.bytes;
        } else if (i == 1) {
            add(ph, "gradients", s.grads);
            add(ph, "temporaries_batch", s.bwdTemp);
            transient = s.bwdTemp.bytes;
        } else {
            add(ph, "gradients", s.grads);
            add(ph, "temporaries_param", s.optTemp);
            add(ph, "temporaries_batch", s.optAct);
            transient = s.optTemp.bytes + s.optAct.bytes;
        }
        add(ph, "temporaries_const", s.constTemp);
        add(ph, "gathered_params", s.gather);
        add(ph, "kv_cache", s.kvCache);
        add(ph, "engine_weights", s.engineWeights);
        double sigma2 = 0, sigmaHigh2 = 0;
        for (const auto& comp : ph.components) {
            ph.allocated += comp.bytes;
            sigma2 += std::pow(comp.bytes * comp.relErr, 2);
            sigmaHigh2 += std::pow(comp.bytes * comp.highErr(), 2);
        }
        const double sigma = std::sqrt(sigma2), sigmaHigh = std::sqrt(sigmaHigh2);
        ph.allocatedLow = std::max(0.0, ph.allocated - sigma);
        ph.allocatedHigh = ph.allocated + sigmaHigh;
        const double cached = transient + s.constTemp.bytes + s.gather.bytes;
        double frag = s.fragRatio * cached;
        // Expandable segments keep some slack (20 MiB), but never more than the default ratio
        // without them would: on a run of a few MiB the floor made the setting raise the peak.
        if (c.expandableSegments)
            frag = std::max(frag, std::min(20 * kMiB, k.fragRatio * cached));
        Component f{"fragmentation", frag, 0, s.fragProvenance, 0.5 * frag, 2 * frag};
        Component ctx{"outside_allocator", s.context, 0, s.contextProvenance,
                      std::max(0.0, s.context - 0.5 * kGiB), std::max(s.context, s.contextHigh)};
        ph.components.push_back(f);
        ph.components.push_back(ctx);
        ph.total = ph.allocated + frag + s.context;
        ph.low = std::max(0.0, ph.allocated - sigma) + f.low + ctx.low;
        ph.high = ph.allocated + sigmaHigh + f.high + ctx.high;
        addWorkspaces(ph, s, s.workspaceThreads(i));
    }
    aggregate(pr);
    pr.capacity = double(dev.capacityBytes);
    pr.margin = s.structural || !s.calibrated ? k.marginStructural : k.marginSame;
    judge(pr, std::max(s.context, s.contextHigh));
    pr.time = stepTime(s, base, k, dev);
    if (&s != &base) {
        const StepTime b0 = stepTime(base, base, k, dev);
        pr.time.relative = b0.total > 0 ? pr.time.total / b0.total : 1;
    }
    pr.notes = s.notes;
    return pr;
}

namespace {

/// The levers applied to each reading of the measured run; the start of backward is the
/// higher of its readings.
Projection evaluateReadings(const WhatIfBaseline& base, const LeverConfig& target, const WhatIfConstants& k,
                            const DeviceSpec& device)
{
    const WhatIfState s = levers::applyAll(base, target, k);
    Projection pr = evaluate(s, base, k, device);
    if (base.lateBackward) {
        const WhatIfBaseline& late = *base.lateBackward;
        const Projection other = evaluate(levers::applyAll(late, target, k), late, k, device);
        if (other.phases[0].present && other.phases[0].total > pr.phases[0].total) {
            pr.phases[0] = other.phases[0];
            aggregate(pr);
            judge(pr, std::max(s.context, s.contextHigh));
        }
    }
    return pr;
}

/// What the dimensions alone do not tell, each reading the shared real files and the CPU
/// matrix allow folded into the analytic mode's band (docs/whatif-accuracy.md, "Analytic from
/// dimensions"): eager layers save up to `actCoeffEager` bytes per s*b*h where Megatron's fused
/// one saves 34, and a fused or single-tensor optimizer step makes no parameter-sized copy.
void foldAnalyticReadings(Projection& pr, const WhatIfBaseline& base, const LeverConfig& target,
                          const WhatIfConstants& k, const DeviceSpec& device)
{
    if (base.calibrated)
        return;
    const double coeff = base.dims.actCoeff > 0 ? base.dims.actCoeff : 34.0;
    if (k.actCoeffEager > coeff && base.actLin.bytes > 0) {
        WhatIfBaseline eager = base;
        eager.actLin.bytes *= k.actCoeffEager / coeff;
        eager.dims.actCoeff = k.actCoeffEager;
        const Projection other = evaluateReadings(eager, target, k, device);
        fold(pr, other);
        pr.notes.push_back("analytic: the saved activations per token are Megatron's fused layer's (" +
                           std::to_string(int(coeff)) + " bytes per hidden unit and layer); eager layers save up to " +
                           std::to_string(int(k.actCoeffEager)) + " (" + formatBytes(int64_t(other.peak)) +
                           "), which the band holds. A recording of one step, even in fake mode, settles it");
    }
    if (base.actQuad.bytes > 0 && !target.flashAttention) {
        const double central = scoreBytes(target.precision, ScoresLayout::SoftmaxDropout);
        for (const ScoresLayout l : {ScoresLayout::SoftmaxOnly, ScoresLayout::OwnSoftmax}) {
            WhatIfBaseline other = base;
            other.actQuad.bytes *= scoreBytes(target.precision, l) / central;
            fold(pr, evaluateReadings(other, target, k, device));
        }
        char text[320];
        std::snprintf(text, sizeof text,
                      "analytic: the attention scores priced at %.0f bytes a score (a softmax and a dropout); a "
                      "softmax alone saves %.0f, one of the model's own (an exp and its division) %.0f, which the "
                      "band holds. A recording of one step settles it",
                      central, scoreBytes(target.precision, ScoresLayout::SoftmaxOnly),
                      scoreBytes(target.precision, ScoresLayout::OwnSoftmax));
        pr.notes.push_back(text);
    }
    if (base.optTemp.bytes > 0) {
        WhatIfBaseline fused = base;
        fused.optTemp.bytes = 0;
        const Projection other = evaluateReadings(fused, target, k, device);
        fold(pr, other);
        if (other.peak < 0.995 * pr.peak)
            pr.notes.push_back("analytic: the optimizer step priced with one parameter-sized temporary (a foreach "
                               "step); a fused or single-tensor step makes none (" +
                               formatBytes(int64_t(other.peak)) + "), which the band holds");
    }
}

} // namespace

Projection project(const WhatIfBaseline& base, const LeverConfig& target, const WhatIfConstants& k,
                   const DeviceSpec& device)
{
    Projection pr = evaluateReadings(base, target, k, device);
    // An unknown measured precision: the same request under each other reading of the run
    // (the levers price weights, gradients and optimizer state per parameter, which the
    // reading decides), folded into the band.
    for (const Precision alt : base.precisionAlternatives) {
        WhatIfBaseline b = base;
        b.precisionAlternatives.clear();
        b.config.precision = alt;
        if (base.lateBackward) {
            auto late = std::make_shared<WhatIfBaseline>(*base.lateBackward);
            late->config.precision = alt;
            b.lateBackward = std::move(late);
        }
        LeverConfig t = target;
        if (target.precision == base.config.precision)
            t.precision = alt;
        const Projection other = project(b, t, k, device);
        fold(pr, other);
        if (std::abs(other.peak - pr.peak) > 0.005 * pr.peak)
            pr.notes.push_back("measured precision unknown: projected as " +
                           std::string(precisionName(base.config.precision)) + "; read as " +
                           std::string(precisionName(alt)) + " the run projects " + formatBytes(int64_t(other.peak)) +
                           ", which the band holds (give the measured precision to narrow it)");
    }
    foldAnalyticReadings(pr, base, target, k, device);
    applyReplay(pr, base, target, k);
    if (!base.precisionAlternatives.empty() || pr.replayed || !base.calibrated)
        judge(pr, std::max(base.context, base.contextHigh));
    const Projection b0 = evaluateReadings(base, base.config, k, device);
    const LeverConfig& c = target;
    const LeverConfig& c0 = base.config;
    if (pr.peakPhase != b0.peakPhase && !pr.replayed)
        pr.notes.push_back("the peak moved from the " + std::string(pr.phaseLabel(b0.peakPhase)) + " to the " +
                           std::string(pr.phaseLabel(pr.peakPhase)));
    if (!pr.replayed && pr.peakPhase != StepPhase::StartOfBackward && (c.seq != c0.seq || c.microBatch != c0.microBatch)) {
        const double fwd = pr.phases[0].total;
        pr.notes.push_back("the peak is in the " + std::string(pr.phaseLabel(pr.peakPhase)) +
                           ", which holds no saved activations: micro-batch and sequence length change only the "
                           "start of backward (" + formatBytes(int64_t(fwd)) + "), not the peak");
    }
    if (base.layersGuessed && (c.checkpoint != Checkpointing::None || c.zero == 3 || c.offload == Offload::Params))
        pr.notes.push_back("layer count unknown: assumed " + std::to_string(base.layers) +
                           " [G]; the model's layer count settles it");
    return pr;
}

} // namespace headroom
