// SPDX-License-Identifier: MIT
#include "core/whatif/replay/replayprojection.h"

#include "core/util/units.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/terms/whatiflevers.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

namespace headroom {

namespace {

/// The replay's own error on its readings: sizes rounded to the allocator's 512 bytes, small
/// tensors read as constant (docs/whatif-model.md, "Band").
constexpr double kReplayResidual = 0.01;

/// Bytes of a floating-point element at a pure precision (every tensor in it); 0 for mixed
/// precision, whose casts and fp32 ops the trace does not tell apart.
double pureElementBytes(Precision p)
{
    return p == Precision::Fp32 ? 4 : p == Precision::Bf16 ? 2 : 0;
}

/// The state's and the step temporaries' bytes of optimizer `o` over the measured one's, at
/// the measured precision (a pure precision change scales them with the floats). False when
/// `o` needs what the trace does not have: state or temporaries where the measured step had none.
bool optimizerRatios(const WhatIfBaseline& base, OptimizerKind o, ReplayTarget& r)
{
    const TraceProjector& tp = *base.trace;
    const StateBytes from = base.table(base.config.precision, base.config.optimizer);
    const StateBytes to = base.table(base.config.precision, o);
    auto ratio = [](double a, double b, int64_t measured, double& out) {
        if (a > 0 && measured > 0)
            return out = b / a, true;
        return b == 0 ? (out = 1, true) : false; // nothing to scale, and none wanted
    };
    return ratio(from.optimizer, to.optimizer, tp.laws().roleBytes(StateRole::OptimizerState), r.optimizerState) &&
           ratio(from.optimizerTemp, to.optimizerTemp, tp.laws().roleBytes(StateRole::OptimizerTemp), r.optimizerTemp);
}

/// Sharding and offload as the terms define them (whatiflevers.cpp: withSharding, withOffload),
/// applied to each allocation of their role at its own moment: the device's share of the
/// parameters, gradients, optimizer state and step temporaries over the measured run's, and a
/// gathered layer held throughout. False where the target needs what the trace cannot show (a
/// role the terms keep that the trace has none of, or a measured gather to take away).
bool shardingRatios(const WhatIfBaseline& base, const LeverConfig& t, const WhatIfConstants& k, ReplayTarget& r)
{
    const LeverConfig& c0 = base.config;
    if (t.shardsLike(c0))
        return true;
    const WhatIfState to = levers::withOffload(levers::withSharding(base, t.zero, t.devices), t.offload, k);
    const AllocationLaws& laws = base.trace->laws();
    bool ok = true;
    auto ratio = [&](double from, double target, StateRole role) {
        if (from > 0 && laws.roleBytes(role) > 0)
            return target / from;
        ok = ok && target <= 0.01 * std::max(1.0, from); // nothing there, and nothing wanted
        return 1.0;
    };
    r.parameters = ratio(base.weights.bytes, to.weights.bytes, StateRole::Parameter);
    r.gradients = ratio(base.grads.bytes, to.grads.bytes, StateRole::Gradient);
    r.optimizerState *= ratio(base.optimizer.bytes + base.master.bytes, to.optimizer.bytes + to.master.bytes,
                              StateRole::OptimizerState);
    r.optimizerTemp *= ratio(base.optTemp.bytes, to.optTemp.bytes, StateRole::OptimizerTemp);
    if (base.gather.provenance == Provenance::Measured && laws.roleBytes(StateRole::Gather) > 0) {
        r.gathers = to.gather.bytes / base.gather.bytes; // the gathers the trace shows, resized
        return ok;
    }
    const double gather = to.gather.bytes - base.gather.bytes;
    if (gather < 0)
        return false; // the measured run's gathered layers are not told apart in the trace
    r.standing = gather;
    r.standingLow = gather * (1 - to.gather.relErr);
    r.standingHigh = gather * (1 + to.gather.relErr);
    return ok;
}

/// What the replay projects `t` to, when it can: `t` moves nothing but the micro-batch and
/// the sequence of the measured run, and perhaps checkpoints every block of a run measured
/// without checkpointing where the trace's blocks were found, and perhaps moves between pure
/// precisions from a measured precision that is known (docs/whatif-model.md, "Precision").
std::optional<ReplayTarget> replayTargetFor(const LeverConfig& t, const WhatIfBaseline& base, const WhatIfConstants& k)
{
    const LeverConfig& c0 = base.config;
    const TraceProjector& tp = *base.trace;
    if (t.microBatch <= 0 || t.seq <= 0)
        return std::nullopt;
    LeverConfig u = t;
    u.microBatch = c0.microBatch;
    u.seq = c0.seq;
    ReplayTarget r{double(t.microBatch), double(t.seq)};
    r.checkpointed = !tp.checkpointPlan().empty() && tp.checkpointPlan().coverage >= kMinCheckpointCoverage &&
                     c0.checkpoint == Checkpointing::None && t.checkpoint == Checkpointing::Full;
    if (r.checkpointed) {
        u.checkpoint = c0.checkpoint;
        u.checkpointEvery = c0.checkpointEvery;
    }
    const double from = pureElementBytes(c0.precision), to = pureElementBytes(t.precision);
    if (t.precision != c0.precision && from > 0 && to > 0 && base.precisionAlternatives.empty()) {
        r.floatWidth = to / from;
        r.castAfterBuild = r.floatWidth < 1; // the central reading where the trace shows the build
        r.dtypeFlow = r.floatWidth < 1 && tp.hasPureFlow();
        u.precision = c0.precision;
    }
    // bf16 autocast of an fp32 run whose op graph the recorder wrote (autocastplan.h).
    if (c0.precision == Precision::Fp32 && t.precision == Precision::AmpBf16 && tp.hasAutocast() &&
        base.precisionAlternatives.empty()) {
        r.autocast = true;
        u.precision = c0.precision;
    }
    if (t.optimizer != c0.optimizer &&
        (base.forwardOnly || (base.precisionAlternatives.empty() && optimizerRatios(base, t.optimizer, r))))
        u.optimizer = c0.optimizer;
    // 0 devices (unknown) is projected as 1 (a ladder's rungs carry the 1): not a move.
    if (u.deviceCount() == c0.deviceCount())
        u.devices = c0.devices;
    // Sharding and offload resize the state's roles (a forward-only run has only parameters).
    if (base.precisionAlternatives.empty() && shardingRatios(base, t, k, r)) {
        u.zero = c0.zero;
        u.devices = c0.devices;
        u.offload = c0.offload;
    }
    // A forward-only run has no optimizer: another one changes nothing the trace holds.
    // expandable_segments moves no allocation: the terms' fragmentation and the simulation take it.
    u.expandableSegments = c0.expandableSegments;
    // Fused attention for a run whose scores the trace shows (read b*s^2): they are not made.
    r.fusedAttention = t.flashAttention && !c0.flashAttention && tp.laws().bytesWith(SizeLaw::TokensBySeq) > 0;
    if (r.fusedAttention)
        u.flashAttention = c0.flashAttention;
    // Accumulation from a run measured at one micro-step: a later micro-step's history.
    r.accumulated = c0.accum == 1 && t.accum > 1 && !tp.accumulationPlan().empty();
    if (r.accumulated || base.forwardOnly) // a forward-only run's micro-steps carry no gradients
        u.accum = c0.accum;
    if (!(u == c0))
        return std::nullopt;
    return r;
}

/// "optimizer replayed: ..." with what it resized.
std::string optimizerNote(const AllocationLaws& laws, const ReplayTarget& r)
{
    auto part = [&](StateRole role, double factor) {
        char text[160];
        std::snprintf(text, sizeof text, "(%lld allocations, %s measured) at x%.2f of its bytes",
                      static_cast<long long>(laws.roleCount(role)), formatBytes(laws.roleBytes(role)).c_str(), factor);
        return std::string(text);
    };
    return "optimizer replayed: its state " + part(StateRole::OptimizerState, r.optimizerState) +
           ", the step's temporaries " + part(StateRole::OptimizerTemp, r.optimizerTemp);
}

/// "sharding and offload replayed: ..." with each role's share on the device.
std::string shardingNote(const AllocationLaws& laws, const ReplayTarget& r, const LeverConfig& t)
{
    auto part = [&](const char* what, StateRole role, double factor) {
        char text[200];
        std::snprintf(text, sizeof text, "%s (%s measured) at x%.3g", what, formatBytes(laws.roleBytes(role)).c_str(),
                      factor);
        return std::string(text);
    };
    std::string note = "sharding and offload replayed (ZeRO-" + std::to_string(t.zero) + " over " +
                       std::to_string(t.deviceCount()) + ", offload " + std::string(offloadName(t.offload)) +
                       ", as the terms shard them): " + part("the parameters", StateRole::Parameter, r.parameters) +
                       ", " + part("the gradients", StateRole::Gradient, r.gradients) + ", " +
                       part("the optimizer state", StateRole::OptimizerState, r.optimizerState) + ", " +
                       part("the step's temporaries", StateRole::OptimizerTemp, r.optimizerTemp);
    if (laws.roleBytes(StateRole::Gather) > 0)
        note += ", " + part("the gathered layers", StateRole::Gather, r.gathers);
    if (r.standing > 0)
        note += "; a gathered layer of " + formatBytes(int64_t(r.standing)) +
                " held at every event (band " + formatBytes(int64_t(r.standingLow)) + " .. " +
                formatBytes(int64_t(r.standingHigh)) + ")";
    return note;
}

/// "fused attention replayed: ..." with what it drops.
std::string fusedNote(const AllocationLaws& laws)
{
    return "fused attention replayed: no tensor read as b*s^2 is made (the scores, their softmax and the "
           "backward's gradients of them: " + formatBytes(laws.bytesWith(SizeLaw::TokensBySeq)) +
           " made over the measured trace); those that may be b*s^2 by their size (" +
           formatBytes(laws.quadraticPossible()) + " over the trace) are dropped in the band's low edge only. "
           "FlashAttention's own per-row statistics (b*h*s floats) are not counted";
}

/// "precision replayed: ..." with what the dtypes were read from.
std::string widthNote(const AllocationLaws& laws, const ReplayTarget& r)
{
    const WidthReadings& w = laws.widths();
    std::string note = "precision replayed: every floating-point tensor of the trace at " +
                       std::string(r.floatWidth < 1 ? "half" : "twice") + " its bytes (" +
                       std::to_string(w.floatRead) + " by their recorded dtype, " + std::to_string(w.floatAssumed) +
                       " assumed where none was recorded); " + std::to_string(w.fixedRead) +
                       " integer or bool tensors by their recorded dtype keep their size";
    if (w.either > 0)
        note += "; " + std::to_string(w.either) + " model inputs (" + formatBytes(w.eitherBytes) +
                ") may be token ids or features: both readings are in the band (record with shapes to settle it)";
    return note;
}

/// "precision replayed by the recorded op graph: ..." (a pure narrowing by the dtype flow).
std::string flowNote(const AutocastPlan& plan)
{
    int64_t kept = 0;
    for (const AutocastPlan::Copy& c : plan.copies)
        kept += c.narrow ? 0 : 1;
    return "precision replayed by the recorded op graph: " + std::to_string(plan.narrowedCount) +
           " floating-point tensors at half their bytes; what the no-op casts the recorder named keep in fp32 (an "
           "RMSNorm's x.to(torch.float32)) stays fp32, with " + std::to_string(kept) + " fp32 copies and " +
           std::to_string(int64_t(plan.copies.size()) - kept) + " casts back";
}

/// "ambiguous: ..." where the cast after the build moves the peak: both readings and their peaks.
std::optional<std::string> castNote(const TraceProjector& tp, const TraceReplayPeak& at, Precision from, Precision to)
{
    const double narrow = at.builtNarrow; // -1 where the replay had no cast to make
    if (narrow < 0 || at.central <= narrow * 1.001)
        return std::nullopt;
    const CastPlan& plan = tp.castPlan();
    const std::string f(precisionName(from)), w(precisionName(to));
    return "ambiguous: how the model reaches " + w + ". The trace shows it built on this device in " + f + " (" +
           std::to_string(plan.parameters) + " parameters, " + formatBytes(plan.parameterBytes) + ", and " +
           std::to_string(int64_t(plan.cast.size()) - plan.parameters) + " other tensors alive after the build). "
           "Cast after the build (model.to(torch.bfloat16)), every " + f + " tensor of it is alive at once: " +
           formatBytes(int64_t(at.central)) + " allocated at event " + std::to_string(at.centralEvent) +
           " (taken). Built in " + w + " (dtype= at construction, or cast before it reaches the device): " +
           formatBytes(int64_t(narrow)) + " (the band's low edge). A run at the target precision settles it";
}

/// Autocast replayed: the note, and the band's allowance for the casts no recorder saw (a
/// no-op cast made in C++ is a real copy under autocast), both ways.
void applyAutocastBand(Projection& pr, const TraceProjector& tp, const TraceReplayPeak& r, const WhatIfConstants& k)
{
    const AutocastPlan& plan = tp.autocastPlan();
    const double unseen = k.unseenUpcastShare * r.central;
    pr.peakAllocatedHigh += unseen;
    pr.peakHigh += unseen;
    pr.peakAllocatedLow -= unseen;
    pr.peakLow -= unseen;
    pr.notes.push_back("autocast replayed from the recorded op graph: " + std::to_string(plan.narrowedCount) +
                       " allocations made in bf16 by the ops autocast narrows and those that follow them, " +
                       std::to_string(plan.copies.size()) + " casts added (" + std::to_string(plan.weightCopies) +
                       " of weights, cached for each of " + std::to_string(plan.regions) + " autocast regions), " +
                       std::to_string(plan.earlyEnds.size()) +
                       " fp32 tensors freed early where autograd keeps their casts instead, " +
                       std::to_string(plan.fp32Ops) + " ops run in fp32 from bf16 inputs (" +
                       autocastListsName(plan.lists) + " autocast lists), " + std::to_string(plan.recordedCasts) +
                       " inputs read through the no-op casts the recorder named; casts it could not see (made in C++) "
                       "are allowed " + formatBytes(int64_t(unseen)) + " either way in the band (a run under autocast "
                       "settles it)");
}

std::vector<ProjectedAmbiguity> ambiguitiesAt(const TraceProjector& tp, const ReplayTarget& t, const TraceReplayPeak& at)
{
    std::vector<ProjectedAmbiguity> out;
    for (const AmbiguityWorth& w : tp.worth(t, 5, &at)) {
        const LawAmbiguity& a = tp.laws().ambiguities()[w.group];
        const int offset = a.offset ? tp.laws().tokenOffset() : 0;
        ProjectedAmbiguity p{a.where, a.sizeEach, a.count, sizeLawName(a.central, offset), {},
                             std::string(lawEvidenceName(a.evidence)), w.low, w.high, a.shapeRecorded};
        for (size_t l = 0; l < kSizeLawCount; ++l)
            if (a.allowed & (1u << l))
                p.readings.push_back(sizeLawName(SizeLaw(l), offset));
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace

void applyReplay(Projection& pr, const WhatIfBaseline& base, const LeverConfig& t, const WhatIfConstants& k)
{
    const std::optional<ReplayTarget> target = base.trace ? replayTargetFor(t, base, k) : std::nullopt;
    if (!target)
        return;
    const TraceProjector& tp = *base.trace;
    const bool checkpointed = target->checkpointed;
    const TraceReplayPeak r = tp.project(*target);
    pr.termsPeak = pr.peak;
    pr.termsPeakAllocated = pr.peakAllocated;
    pr.termsPeakPhase = pr.peakPhase;
    const double over = pr.peak - pr.peakAllocated;
    const double overLow = pr.peakLow - pr.peakAllocatedLow, overHigh = pr.peakHigh - pr.peakAllocatedHigh;
    pr.peakAllocated = r.central;
    pr.peakAllocatedLow = std::min(r.low, r.central) * (1 - kReplayResidual);
    pr.peakAllocatedHigh = std::max(r.high, r.central) * (1 + kReplayResidual);
    pr.peak = pr.peakAllocated + over;
    pr.peakLow = pr.peakAllocatedLow + overLow;
    pr.peakHigh = pr.peakAllocatedHigh + overHigh;
    pr.replayed = true;
    pr.replayPeakEvent = r.centralEvent;
    pr.measuredPeakEvent = tp.measuredPeakEvent();
    pr.replayTarget = *target;
    pr.ambiguities = ambiguitiesAt(tp, *target, r);
    if (target->accumulated) {
        const AccumulationPlan& plan = tp.accumulationPlan();
        pr.notes.push_back("accumulation replayed: from the second micro-step on, the " + std::to_string(plan.gradients) +
                           " gradients the backward makes (" + formatBytes(plan.gradientBytes) +
                           " measured) are alive through the forward, and what the backward makes of each is "
                           "added into it and freed");
    }
    if (target->fusedAttention)
        pr.notes.push_back(fusedNote(tp.laws()));
    const bool sharded = !t.shardsLike(base.config);
    if (!sharded && (target->optimizerState != 1 || target->optimizerTemp != 1))
        pr.notes.push_back(optimizerNote(tp.laws(), *target));
    if (sharded && (target->parameters != 1 || target->gradients != 1 || target->optimizerState != 1 ||
                    target->optimizerTemp != 1 || target->standing > 0))
        pr.notes.push_back(shardingNote(tp.laws(), *target, t));
    if (const auto note = castNote(tp, r, base.config.precision, t.precision))
        pr.notes.push_back(*note);
    if (target->floatWidth != 1) {
        // A 16-bit model may compute some ops in fp32 (an RMSNorm's x.float()): their casts
        // and wide results are in the 16-bit run only. The band allows them, on the far side.
        const double unseen = k.unseenUpcastShare * r.central;
        if (target->floatWidth < 1) {
            pr.peakAllocatedHigh += unseen;
            pr.peakHigh += unseen;
        } else {
            pr.peakAllocatedLow -= unseen;
            pr.peakLow -= unseen;
        }
        if (target->dtypeFlow)
            pr.notes.push_back(flowNote(tp.pureFlowPlan()) + "; casts the recorder could not see (made in C++) are "
                               "allowed " + formatBytes(int64_t(unseen)) + " in the band (a run at the target "
                               "precision settles it)");
        else
            pr.notes.push_back(widthNote(tp.laws(), *target) + "; ops a 16-bit model computes in fp32 (an RMSNorm's "
                               "x.float()) are not in the wider trace: the band allows " + formatBytes(int64_t(unseen)) +
                               " for them (a run at the target precision settles it)");
    }
    if (target->autocast)
        applyAutocastBand(pr, tp, r, k);
    if (checkpointed) {
        const CheckpointPlan& plan = tp.checkpointPlan();
        pr.replayCheckpointedBlocks = plan.blocks;
        // The recompute re-runs a block's forward beside its saved tensors: its temporaries
        // may add to the peak (the replay re-makes the saved tensors only). Each block keeps
        // its output, which the checkpointed run may hold for less long than the recorded one.
        const double tokens = lawFactor(SizeLaw::Tokens, t.microBatch / double(tp.measuredMicroBatch()),
                                        t.seq / double(tp.measuredSeq()));
        const double up = double(plan.recomputeTransient) * tokens, down = double(plan.largestOutput) * tokens;
        pr.peakAllocatedHigh += up;
        pr.peakHigh += up;
        pr.peakAllocatedLow -= down;
        pr.peakLow -= down;
        const std::string blocks = plan.byModule
                                       ? " layers the recorder named (" + std::to_string(plan.runs) +
                                             (plan.runs == 1 ? " list" : " lists") + " of layers)"
                                       : " repeated blocks of the forward (" + std::to_string(plan.runs) +
                                             (plan.runs == 1 ? " run" : " runs") + " of layers)";
        pr.notes.push_back("checkpointing replayed: each of the " + std::to_string(plan.blocks) + blocks +
                           " keeps its output, frees its other saved tensors when its forward ends and makes them "
                           "again when the backward reaches it");
    }
    // Never a silent partial result: an OOM cut the history the replay resizes.
    if (tp.stoppedAt() >= 0)
        pr.notes.push_back("the measured run stopped at an OOM (event " + std::to_string(tp.stoppedAt()) +
                           "): the replay projects the history as far as it was recorded, so a step cut there "
                           "needs more than this peak (the diagnosis bounds the whole step)");
}


} // namespace headroom
