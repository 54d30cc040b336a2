// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/replay/allocatorconstants.h"

#include "core/analysis/oomprogress.h"
#include "core/analysis/deviceimbalance.h"

#include "core/analysis/categorychecks.h"
#include "core/util/units.h"
#include "core/whatif/laws/allocationlaw.h"
#include "core/whatif/laws/autocastcache.h"
#include "core/whatif/laws/stackreadings.h"
#include "core/whatif/calibration/targetworkspaces.h"
#include "core/whatif/replay/autocastplan.h"
#include "core/whatif/calibration/calibrationpoints.h"
#include "core/whatif/calibration/transientsplit.h"
#include "core/whatif/calibration/scoresautocast.h"
#include "core/whatif/calibration/settledconfig.h"
#include "core/whatif/calibration/measuredsettler.h"
#include "core/whatif/calibration/precisionevidence.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/replay/checkpointplan.h"
#include "core/whatif/vocabulary/whatifblocks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace headroom {

namespace {

constexpr double kMaxFragRatio = 0.20; // fragmentation per transient byte, at most

/// The allocations of `l` that are activations.
std::vector<uint32_t> activations(const LivePoint& l)
{
    std::vector<uint32_t> out;
    for (size_t i = 0; i < l.allocs.size(); ++i)
        if (isActivationCategory(l.allocs[i].first))
            out.push_back(l.index[i]);
    return out;
}

/// The repeated blocks among the activations of `l`, in allocation order.
RepeatedBlocks repeatedBlocks(const MemoryTimeline& tl, const LivePoint& l)
{
    const SavedSequence seq = savedSequence(tl, activations(l));
    return findRepeatedBlocks(seq.keys, seq.bytes);
}

Term measured(double bytes) { return {bytes, 0.01, Provenance::Measured}; }

} // namespace

const MeasuredItem* Calibration::item(std::string_view key) const
{
    for (const auto& m : measured)
        if (m.key == key)
            return &m;
    return nullptr;
}

bool Calibration::known(std::string_view key) const
{
    const MeasuredItem* m = item(key);
    return m && (m->how == "read" || m->how == "stated");
}

void Calibration::require(const LeverConfig& t) const
{
    if (std::optional<WhatIfMissingValue> m = missing(t))
        throw *m;
}

std::optional<WhatIfMissingValue> Calibration::missing(const LeverConfig& t, const LeverConfig* from) const
{
    const LeverConfig& b = from ? *from : baseline.config;
    std::optional<WhatIfMissingValue> out;
    auto need = [&](bool moved, const char* key, const char* flag, const char* what, const char* because) {
        const MeasuredItem* m = item(key);
        if (!out && moved && !known(key) && !(m && m->how == "ratio"))
            out.emplace(key, flag, std::string("the trace does not tell the ") + what + " it was measured at; pass " +
                                       flag + " (needed for " + because + ")");
    };
    need(t.microBatch != b.microBatch, "micro_batch", "--measured-micro-batch", "micro-batch", "--micro-batch");
    need(t.seq != b.seq, "seq", "--measured-seq", "sequence length", "--seq");
    need(t.precision != b.precision, "precision", "--measured-precision", "precision", "--precision");
    // A forward-only run keeps no optimizer state: another optimizer changes nothing there.
    need(t.optimizer != b.optimizer && !known("optimizer_bytes") && !baseline.forwardOnly, "precision", "--measured-precision", "precision",
         "--optimizer");
    // Sharding or offloading the parameters divides their bytes: unknown bytes cannot be divided. A
    // run recorded sharded (FSDP, ZeRO-3: read from its gathers) keeps its measured shards.
    need(((t.zero == 3 && b.zero != 3) || (t.offload != Offload::None && t.offload != b.offload)) && baseline.params <= 0,
         "precision", "--measured-precision", "precision", "--zero 3 / --offload");
    // 0 devices (unknown) is projected as 1: not a move.
    need(t.deviceCount() != b.deviceCount() || t.zero != b.zero, "devices", "--measured-devices", "device count",
         "--devices / --zero");
    return out;
}

namespace {

/// `forcedStart`: read the start of backward at this event (the late-backward reading).
Calibration calibrateAt(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                        const StatedConfig& stated, const ModelDims& dims, const WhatIfConstants& k,
                        int64_t forcedStart);

/// How many of the weights a forward has used by its peak (the autocast casts a no_grad
/// forward holds there): counted from torch's layers, else assumed half.
MeasuredItem weightUsesItem(const std::optional<WeightUses>& u)
{
    if (!u)
        return {"autocast_weight_uses", "half", "assumed",
                "no torch Linear/Conv call in the forward to count: the share of weights whose autocast casts "
                "a no_grad forward holds at its peak"};
    return {"autocast_weight_uses", std::to_string(u->before) + " of " + std::to_string(u->total), "read",
            "torch Linear/Conv calls made by the forward's peak: the share of weights whose autocast casts a "
            "no_grad forward holds there"};
}

/// The FlashAttention reading from every allocation's law, not the live set at the measured
/// peak alone: a forward under no_grad frees each layer's scores before its FFN, so a peak
/// there holds none, yet the run materialised them ("off"). Where a tensor may be b*s^2 but
/// none is read so, "ambiguous".
void readFlashAttention(Calibration& cal)
{
    WhatIfBaseline& s = cal.baseline;
    if (!s.trace || !s.config.flashAttention)
        return;
    const AllocationLaws& laws = s.trace->laws();
    const int64_t possible = laws.quadraticPossible(), read = laws.bytesWith(SizeLaw::TokensBySeq);
    for (auto& m : cal.measured) {
        if (m.key != "flash_attention")
            continue;
        if (read > 0) {
            s.config.flashAttention = false;
            m.value = "off";
            m.how = "read";
            m.detail = formatBytes(read) + " of tensors read as b*s^2 (scores) by their shape or stack, none alive "
                       "at the measured peak";
        } else if (possible > 0) {
            m.how = "ambiguous";
            m.detail = "no tensor is read as b*s^2 by its stack, but " + formatBytes(possible) +
                       " of attention code divides as b*s^2 (scores) as well as b*s (activations)";
        }
    }
}

/// The OOM's step, when it is the calibrated iteration and the OOM stopped it before its
/// optimizer step.
std::optional<CutStep> cutStepOf(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a, int iteration)
{
    const auto& actions = trace.snapshot.devices[deviceIndex].trace.action;
    const auto oom = std::find(actions.begin(), actions.end(), TraceAction::Oom);
    if (oom == actions.end() || a.phases.iterationOf(oom - actions.begin()) != iteration)
        return std::nullopt;
    const std::optional<OomProgress> pr = oomProgress(trace, deviceIndex, a);
    if (!pr || pr->phase == Phase::Optimizer || pr->phase == Phase::Other)
        return std::nullopt;
    return CutStep{std::string(phaseKey(pr->phase)), pr->lowerBound, pr->estimateLow, pr->estimateHigh};
}

/// What the trace says of attention, the allocator's expandable segments and checkpointing
/// (the configuration items a lever starts from).
void readAttentionAndAllocator(Calibration& cal, LeverConfig& c, const LoadedTrace& trace, const DeviceData& dev,
                               bool scoresSaved, bool seqKnown, const MemoryTimeline& tl)
{
    if (scoresSaved) {
        c.flashAttention = false;
        cal.measured.push_back({"flash_attention", "off", "read", "attention scores (b*s^2 tensors) in the forward"});
    } else if (!seqKnown) {
        c.flashAttention = true;
        cal.measured.push_back({"flash_attention", "on", "assumed", "sequence length unknown"});
    } else if (anyFusedAttention(tl, trace.snapshot.frames)) {
        c.flashAttention = true;
        cal.measured.push_back({"flash_attention", "on", "read",
                                "no b*s^2 tensors in the forward, and a frame names a fused attention kernel"});
    } else {
        // Absence alone: a model without attention, or scores over more tokens than the stated
        // sequence (a ViT's class token) that neither a size nor a stack reads as b*s^2.
        c.flashAttention = true;
        cal.measured.push_back({"flash_attention", "on", "assumed",
                                "no tensor read as b*s^2 in the forward, and no frame names a fused attention kernel"});
    }
    for (const auto& [key, val] : trace.snapshot.allocatorSettings)
        if (key.find("expandable") != std::string::npos && (val == "True" || val == "true" || val == "1"))
            c.expandableSegments = true;
    for (const auto& seg : dev.segments)
        c.expandableSegments |= seg.expandable;
    cal.measured.push_back({"expandable_segments", c.expandableSegments ? "on" : "off", "read", "allocator settings"});
    // The stored activations are what the run kept, checkpointed or not: they are projected as is.
    MeasuredItem ck{"checkpointing", "none", "assumed", "a measured run with checkpointing is projected as is"};
    for (const auto& [key, value] : trace.snapshot.runConfig)
        if (key == "checkpoint" || key == "checkpointing")
            ck = {"checkpointing", value, "read", std::string(kRunConfigSource) + "; projected as is"};
    cal.measured.push_back(ck);
}

/// The model's layers: the dimensions given, the layer lists the recorder named, the blocks
/// whose saved tensors repeat through the forward, else a guess of 24.
void readLayers(Calibration& cal, WhatIfBaseline& s, const ModelDims& dims, const MemoryTimeline& tl,
                const LivePoint& L1)
{
    if (dims.layers > 0) { // given (dims.valid() implies it)
        s.layers = dims.layers;
    } else if (s.trace && s.trace->checkpointPlan().byModule && s.trace->checkpointPlan().blocks >= 2) {
        // The layers the recorder named (moduleblocks.h): the model's layer lists.
        const CheckpointPlan& plan = s.trace->checkpointPlan();
        s.layers = plan.blocks;
        cal.measured.push_back({"layers", std::to_string(plan.blocks), "read",
                                std::to_string(plan.blocks) + " layers the recorder named in " +
                                    std::to_string(plan.runs) + (plan.runs == 1 ? " list" : " lists")});
    } else if (const RepeatedBlocks rb = repeatedBlocks(tl, L1); rb.count >= 2) {
        // The layers are the blocks whose saved tensors repeat through the forward.
        s.layers = rb.count;
        cal.measured.push_back({"layers", std::to_string(rb.count), "read",
                                std::to_string(rb.count) + " repeated blocks of " + std::to_string(rb.period) +
                                    " saved tensors in the forward"});
    } else {
        s.layers = 24;
        s.layersGuessed = true;
    }
}

/// The chosen iteration's step time, from its start to the next one's (seconds; 0: the trace
/// has no times, or the iteration has no optimizer step).
double measuredStepTime(const DeviceData& dev, const std::vector<IterationPeak>& its, const SteadyIteration& chosen)
{
    const IterationPeak& it = its[chosen.index];
    if (dev.trace.anyTime) {
        const auto& t = dev.trace.timeUs;
        int64_t endEvent = it.endEvent;
        if (chosen.index + 1 < its.size())
            endEvent = its[chosen.index + 1].startEvent;
        if (t[size_t(it.startEvent)] != TraceEvents::kNoTime && t[size_t(endEvent)] != TraceEvents::kNoTime &&
            t[size_t(endEvent)] > t[size_t(it.startEvent)] && chosen.optimizer)
            return double(t[size_t(endEvent)] - t[size_t(it.startEvent)]) * 1e-6;
    }
    return 0;
}

/// The optimizer: the annotation, else the state-to-gradient ratio `state` x `shards` /
/// `gradients` (`shards`: the devices the state alone is split over, 0 unknown: no ratio);
/// fused when the step leaves no parameter-sized temporaries (`stepTemps`).
std::optional<OptimizerKind> settleOptimizer(Calibration& cal, MeasuredSettler& settler,
                                             std::optional<OptimizerKind> stated, std::optional<OptimizerKind> readO,
                                             double state, double gradients, double stepTemps, int shards)
{
    if (gradients <= 0 || state <= 0)
        return settler.optimizer(stated, readO);
    cal.measured.push_back({"optimizer_bytes", "", "read", "optimizer state measured"});
    if (shards <= 0) {
        settler.addOptimizerDetail("optimizer state sharded over an unknown number of devices: its ratio to the "
                                   "gradients does not tell the optimizer");
    } else {
        const double ratio = state * shards / gradients;
        const bool foreach = stepTemps > 0.25 * gradients;
        if (!readO || *readO == OptimizerKind::AdamW || *readO == OptimizerKind::Sgd) {
            OptimizerKind o = ratio > 1.5 ? OptimizerKind::AdamW : ratio > 0.6 ? OptimizerKind::SgdMomentum : OptimizerKind::Sgd;
            if (readO && *readO == OptimizerKind::AdamW)
                o = OptimizerKind::AdamW;
            if (o == OptimizerKind::AdamW && !foreach)
                o = OptimizerKind::AdamWFused;
            settler.addOptimizerDetail("optimizer state / gradients = " + std::to_string(ratio).substr(0, 4) +
                                       (foreach ? ", parameter-sized step temporaries (foreach)"
                                                : ", no step temporaries (fused)"));
            readO = o;
        }
    }
    return settler.optimizer(stated, readO);
}

/// What the optimizer step allocates besides its state: temporaries, and the batch it holds.
struct StepExtras {
    double temps = 0, batch = 0;
};

StepExtras stepExtras(const LivePoint& L2)
{
    StepExtras out;
    for (size_t i = 0; i < L2.allocs.size(); ++i) {
        const auto [c, sz] = L2.allocs[i];
        if (L2.gathered(i))
            continue; // the gather term, read at the start of backward
        if (isTemporaryCategory(c) && c != TensorCategory::Input)
            out.temps += double(sz);
        else if (isActivationCategory(c) || c == TensorCategory::Input)
            out.batch += double(sz);
    }
    return out;
}

/// The states the step keeps: weights, optimizer state and gradients.
struct ModelStates {
    double optimizer = 0;
    double gradients = 0;
};

/// Stage 4: the weights at the start of backward; the optimizer state there, else the one a
/// first optimizer step creates; the gradients at their fullest of the three points.
ModelStates readModelStates(Calibration& cal, WhatIfBaseline& s, const DeviceAnalysis& a, const LivePoint& L1,
                            const LivePoint& L2, const LivePoint& L3)
{
    s.weights = measured(L1.bytes(TensorCategory::Parameter));
    double O = L1.bytes(TensorCategory::OptimizerState);
    const double Oend = double(a.atEnd.byCategory[size_t(TensorCategory::OptimizerState)]);
    const double Oopt = std::max(L2.bytes(TensorCategory::OptimizerState), Oend);
    if (O <= 0 && Oopt > 0) {
        O = Oopt;
        cal.firstStep = true;
        s.notes.push_back("first optimizer step: the optimizer state it creates (" + formatBytes(int64_t(O)) +
                          ") is added to the forward and backward");
    } else if (O > 0 && Oend > O) {
        // State made before the step (a framework's fp32 main parameters) and more the step made
        // and kept (the optimizer's moments at its first step): every later step holds both.
        cal.firstStep = true;
        s.notes.push_back("first optimizer step: it kept " + formatBytes(int64_t(Oend - O)) +
                          " of optimizer state beside the " + formatBytes(int64_t(O)) +
                          " made before it; both are added to the forward and backward");
        O = Oend;
    }
    s.optimizer = measured(O);
    const double G = std::max({L2.bytes(TensorCategory::Gradient), L3.bytes(TensorCategory::Gradient),
                               L1.bytes(TensorCategory::Gradient)});
    s.grads = measured(G);
    s.gradFwdFraction = G > 0 ? L1.bytes(TensorCategory::Gradient) / G : 0;
    if (s.forwardOnly)
        s.notes.push_back("forward-only trace: projecting weights and activations (no gradients or optimizer state)");
    return {O, G};
}

std::shared_ptr<const std::vector<TensorCategory>> categoriesOf(const DeviceAnalysis& a)
{
    auto categories = std::make_shared<std::vector<TensorCategory>>();
    categories->reserve(a.classes.size());
    for (const AllocationClass& c : a.classes)
        categories->push_back(c.category);
    return categories;
}

/// The replay of every recorded allocation under its law, with the plans the levers need:
/// checkpointing (from `saved`, the activations alive where all are), accumulation, casts,
/// autocast and pure-precision flows.
std::shared_ptr<TraceProjector> replayProjector(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                                                const IterationPeak& it, AllocationLaws laws, int microBatch, int seq,
                                                const std::vector<uint32_t>& saved)
{
    const MemoryTimeline& tl = trace.timelines.at(deviceIndex);
    const DeviceData& dev = trace.snapshot.devices.at(deviceIndex);
    auto tp = std::make_shared<TraceProjector>(tl, std::move(laws), microBatch, seq,
                                               dev.ooms.empty() ? -1 : dev.ooms.front().eventIndex);
    tp->setCheckpointPlan(planCheckpointing(tl, saved, it.startEvent, it.endEvent, dev.trace.tensors,
                                            &trace.snapshot.frames.strings()));
    tp->setAccumulationPlan(planAccumulation(tl, a.classes, a.phases, Iteration{it.iteration, it.startEvent, it.endEvent}));
    tp->setCastPlan(planCast(tl, a.classes, a.phases, tp->laws()));
    tp->setAutocastPlan(planAutocast(tl, dev.trace, trace.snapshot.frames, a.phases, trace.snapshot.annotations,
                                     autocastListsFor(trace.snapshot)));
    tp->setPureFlowPlan(planPureFlow(tl, dev.trace, trace.snapshot.frames, a.phases));
    return tp;
}

/// What every calibrated baseline starts from: the constants' CUDA context, the dimensions
/// given, and whose autocast lists the projection applies (the CPU recorder's, or CUDA's where
/// the file was recorded on a GPU or names one as its target): the replay's, the terms' too.
void startBaseline(WhatIfBaseline& s, const LoadedTrace& trace, const ModelDims& dims, const WhatIfConstants& k)
{
    s.calibrated = true;
    s.torchAutocast = true;
    s.cpuAutocast = autocastListsFor(trace.snapshot) == AutocastLists::Cpu113;
    s.dims = dims;
    s.context = k.contextBytes;
    s.contextHigh = k.contextHighBytes;
    const TargetWorkspaces w = targetWorkspaces(trace.snapshot);
    s.workspaceEach = w.each;
    s.workspaceEachHigh = w.eachHigh;
    if (w.each > 0)
        s.notes.push_back("the target GPU's cuBLAS workspaces, which a recording made off it cannot show: " +
                          formatBytes(int64_t(w.each)) + " per thread that runs matmuls (" +
                          (w.hopper ? "sm_90's 32 MiB" : "CUBLAS_WORKSPACE_CONFIG's default :4096:2:16:8") +
                          ", PyTorch 2.x, for " + w.target +
                          "), one in the forward and two once autograd's backward thread runs one, from the caching "
                          "allocator at each thread's first matmul; the band allows " +
                          formatBytes(int64_t(w.eachHigh)) + " each (cuBLASLt's workspace beside it)");
}

/// The cache's free bytes per transient byte at the start of backward (`transients`: the
/// activations and batch temporaries there).
void readFragmentation(WhatIfBaseline& s, const MemoryTimeline& tl, int64_t e1, double transients)
{
    const double F1 = double(tl.reserved[size_t(e1)] - tl.allocated[size_t(e1)]);
    if (transients > 0 && F1 >= 0) {
        // Capped: at the peaks of the real snapshots 1.3-19% of reserved memory is unallocated;
        // a trace whose cache holds more than its transients (freed activations kept cached)
        // would otherwise add a byte of fragmentation for every projected activation byte.
        s.fragRatio = std::min(kMaxFragRatio, F1 / transients);
        s.fragProvenance = Provenance::Measured;
    }
}

/// The levers at the measured run: the settled values, an unknown precision projected as the
/// first reading the stacks leave open (the others kept as alternatives for the band).
void setMeasuredLevers(WhatIfBaseline& s, const SettledConfig& settled, std::optional<OptimizerKind> optimizer,
                       const PrecisionEvidence& pEvidence)
{
    LeverConfig& c = s.config;
    c.microBatch = settled.microBatch.value_or(0);
    c.seq = settled.seq.value_or(0);
    c.accum = settled.accum.value_or(1);
    c.devices = settled.devices.value_or(0);
    c.zero = settled.zero.value_or(0);
    if (settled.precision) {
        c.precision = *settled.precision;
    } else {
        const std::vector<Precision> open = pEvidence.candidates();
        c.precision = open.front();
        s.precisionAlternatives.assign(open.begin() + 1, open.end());
    }
    c.optimizer = optimizer.value_or(OptimizerKind::AdamW);
}

/// The activations and temporaries of `live` that grow with the batch (`tokens`: b*s).
double batchShapedBytes(const LivePoint& live, int64_t tokens)
{
    double bytes = 0;
    for (size_t i = 0; i < live.allocs.size(); ++i) {
        const auto [c, sz] = live.allocs[i];
        if ((isActivationCategory(c) || isTemporaryCategory(c)) && batchShaped(sz, tokens) && !live.frameworkMade(i))
            bytes += double(sz);
    }
    return bytes;
}

} // namespace

Calibration calibrate(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a, const StatedConfig& stated,
                      const ModelDims& dims, const WhatIfConstants& k)
{
    Calibration cal = calibrateAt(trace, deviceIndex, a, stated, dims, k, -1);
    cal.optimizerStateSuspect = optimizerStateSuspect(brokenCategoryInvariants(trace.timelines.at(deviceIndex), a));
    cal.outlierDevice = findDeviceImbalance(trace, deviceIndex).has_value();
    cal.cutStep = cutStepOf(trace, deviceIndex, a, cal.iteration);
    readFlashAttention(cal);
    return cal;
}

namespace {

Calibration calibrateAt(const LoadedTrace& trace, size_t deviceIndex, const DeviceAnalysis& a,
                        const StatedConfig& stated, const ModelDims& dims, const WhatIfConstants& k,
                        int64_t forcedStart)
{
    Calibration cal;
    WhatIfBaseline& s = cal.baseline;
    const MemoryTimeline& tl = trace.timelines.at(deviceIndex);
    const DeviceData& dev = trace.snapshot.devices.at(deviceIndex);
    const auto& phase = a.phases.eventPhase;
    startBaseline(s, trace, dims, k);
    if (phase.empty() || a.iterationPeaks.empty())
        throw std::runtime_error("the trace has no allocation events to calibrate on");

    // 1. A steady-state iteration, 2. its measured points (calibrationpoints.h).
    const auto& its = a.iterationPeaks;
    const SteadyIteration chosen = chooseSteadyIteration(a);
    cal.outlierBatch = chosen.outlierBatch;
    const IterationPeak& it = its[chosen.index];
    cal.iteration = it.iteration;
    cal.measuredPeak = double(it.peakBytes);
    s.forwardOnly = !chosen.backward && !chosen.optimizer;
    std::optional<WeightUses> weightUses;
    if (s.forwardOnly) {
        weightUses = weightUsesBefore(tl, trace.snapshot.frames, it.startEvent, it.endEvent, it.peakEvent);
        s.forwardWeightUses = weightUses ? weightUses->share() : -1.0;
        if (weightUses)
            s.forwardMoments = forwardMoments(tl, it.startEvent, it.peakEvent, *weightUses);
    }
    const MeasuredPoints points = measuredPoints(tl, a, it, forcedStart);
    const int64_t e1 = points.startOfBackward, e2 = points.optimizer, e3 = points.endOfBackward;
    const int64_t latePoint = points.latePoint, boundaryPoint = points.boundaryPoint;
    const int backwardSpans = points.backwardSpans;
    cal.events = {e1, e3, e2};
    const LivePoint L1 = livePointAt(tl, a, e1);
    const LivePoint L2 = e2 >= 0 ? livePointAt(tl, a, e2) : LivePoint{};
    const LivePoint L3 = e3 >= 0 ? livePointAt(tl, a, e3) : LivePoint{};

    // 3. The measured configuration: stated wins over read; read from annotations and sizes.
    std::vector<MeasuredItem> readHow;
    StatedConfig read = readTraceConfig(trace, deviceIndex, &readHow);
    const PrecisionEvidence pEvidence = PrecisionEvidence::read(trace.snapshot.frames);
    readDevices(read, readHow, trace, deviceIndex, a, stated, pEvidence);
    MeasuredSettler settler(cal.measured, std::move(readHow));
    const SettledConfig settled = settleConfiguration(settler, read, stated, dims, L1, backwardSpans, pEvidence);
    const auto& b0 = settled.microBatch;
    const auto& s0 = settled.seq;
    const auto& p0 = settled.precision;

    // 4. Model states.
    const ModelStates states = readModelStates(cal, s, a, L1, L2, L3);
    const double O = states.optimizer, Gfull = states.gradients;

    const StepExtras step = stepExtras(L2);
    // DDP's buckets hold the gradients a second time: the ratio is to the parameters' own.
    const double buckets = L2.bytesByRule(a, CategoryRule::DdpGradientBucket);
    // ZeRO-1 shards the state alone; from ZeRO-2 on (FSDP's FULL_SHARD too) the gradients are
    // sharded with it and their ratio is the optimizer's as it is.
    const int shards = settled.zero.value_or(0) == 1 ? settled.devices.value_or(0) : 1;
    const std::optional<OptimizerKind> o0 =
        settleOptimizer(cal, settler, stated.optimizer, read.optimizer, O, Gfull - buckets, step.temps, shards);

    // 5. Activations and temporaries at the start of backward.
    const bool amp = p0 && (*p0 == Precision::AmpBf16 || *p0 == Precision::AmpFp16);
    // Which saved tensors are attention scores: each allocation's own law (core/whatif/
    // allocationlaw.h), the same reading the replay projects with, never a set of byte sizes.
    std::optional<AllocationLaws> laws;
    if (s0 && *s0 > 1)
        laws = AllocationLaws::fromSnapshot(tl, a.classes, trace.snapshot.frames, b0.value_or(1), *s0, amp,
                                            a.phases.iterations, dev.trace.tensors);
    if (laws && laws->shapeRead() > 0)
        cal.measured.push_back({"shapes", std::to_string(laws->shapeRead()), "read",
                                "allocations whose growth their recorded shape decides (headroom_tensor)"});
    const int64_t tokens = b0 && s0 ? int64_t(*b0) * *s0 : 0;
    const TransientSplit split =
        splitTransients({tl, phase, it, e1, L1, Gfull, amp, laws ? &*laws : nullptr, tokens});
    s.backwardDone = split.backwardDone;
    const double lin = split.linear, quad = split.quadratic, cache = split.autocastCache, batchT = split.batchTemps,
                 constT = split.constTemps, small = split.small, batchGradT = split.batchGradTemps;
    // The replay keeps the laws (the main reading only; the late-backward one is terms alone).
    if (laws && forcedStart < 0 && b0 && *b0 > 0) {
        s.categories = categoriesOf(a);
        // The blocks are read where every saved activation is alive: the forward/backward boundary.
        const LivePoint atBoundary = boundaryPoint >= 0 ? livePointAt(tl, a, boundaryPoint) : LivePoint{};
        s.trace = replayProjector(trace, deviceIndex, a, it, std::move(*laws), *b0, *s0,
                                  activations(boundaryPoint >= 0 ? atBoundary : L1));
    }
    s.actLin = measured(lin);
    s.actSmall = measured(small);
    s.actQuad = measured(quad);
    s.autocastCache = measured(cache);
    s.logits = measured(batchT);
    s.logitsGradShare = batchT > 0 ? batchGradT / batchT : 0;
    const ScoresAutocastRead scores = readScoresAutocast(split.savedScores, split.tempScores, batchT, s0.value_or(0));
    s.scoresAutocast = scores.factors;
    if (!s.cpuAutocast && p0 == Precision::Fp32 && !scores.item.key.empty())
        cal.measured.push_back(scores.item);
    s.constTemp = measured(constT);
    // A gathered layer is as large at any batch; the levers keep it until sharding drops it.
    if (split.gathers > 0)
        s.gather = measured(split.gathers);
    s.kvCache = measured(split.kvCache);
    s.engineWeights = measured(split.engineWeights);
    s.bwdTemp = measured(batchShapedBytes(L3, tokens));
    s.optTemp = measured(step.temps);
    s.optAct = measured(step.batch);

    // 6. Configuration, allocator, step time.
    LeverConfig& c = s.config;
    setMeasuredLevers(s, settled, o0, pEvidence);
    readAttentionAndAllocator(cal, c, trace, dev, quad > 0, s0.has_value(), tl);
    if (s.forwardOnly)
        cal.measured.push_back(weightUsesItem(weightUses));
    if (p0) {
        const StateBytes t = s.table(*p0, c.optimizer);
        s.params = s.weights.bytes / std::max(1.0, t.weights + t.master);
    }
    readLayers(cal, s, dims, tl, L1);
    readFragmentation(s, tl, e1, lin + quad + cache + batchT + small + split.gathers);
    s.measuredAllocated = {double(tl.allocated[size_t(e1)]), e3 >= 0 ? double(tl.allocated[size_t(e3)]) : -1,
                           e2 >= 0 ? double(tl.allocated[size_t(e2)]) : -1};
    s.measuredEvents = cal.events;
    for (size_t i = 0; i < kStepPhaseCount; ++i)
        if (const int64_t e = s.measuredEvents[i]; e >= 0 && size_t(e) < phase.size())
            s.measuredEventPhases[i] = std::string(phaseKey(phase[size_t(e)]));
    s.measuredStepTime = measuredStepTime(dev, its, chosen);
    cal.measured.push_back({"step_time_s", s.measuredStepTime > 0 ? std::to_string(s.measuredStepTime) : "",
                            s.measuredStepTime > 0 ? "read" : "unknown", "iteration " + std::to_string(it.iteration)});
    if (cal.outlierBatch)
        s.notes.push_back("an outlier batch was left out of the calibration; bound batches by a token budget");
    if (latePoint >= 0 || boundaryPoint >= 0)
        s.lateBackward = std::make_shared<const WhatIfBaseline>(
            calibrateAt(trace, deviceIndex, a, stated, dims, k, latePoint >= 0 ? latePoint : boundaryPoint).baseline);
    return cal;
}

} // namespace

} // namespace headroom
