// SPDX-License-Identifier: MIT
#pragma once

// The vocabulary of the what-if projection (docs/whatif-model.md): the
// levers a user can move, model and device descriptions, the editable constants and the
// projected result (components per phase, each with provenance and uncertainty).

#include "core/whatif/vocabulary/replaytarget.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

enum class Checkpointing : uint8_t { None, Selective, Full, EveryK };
enum class Precision : uint8_t { Fp32, AmpBf16, AmpFp16, Bf16 };
enum class OptimizerKind : uint8_t { AdamW, AdamWFused, Adam8bit, Adafactor, Sgd, SgdMomentum };
enum class Offload : uint8_t { None, Optimizer, Params };

/// Where a number comes from (docs/whatif-model.md, "The terms").
enum class Provenance : uint8_t { Measured, Scaled, Modelled, Default };

/// The three points of a training step whose memory the projection evaluates.
enum class StepPhase : uint8_t { StartOfBackward, Backward, OptimizerStep };
inline constexpr size_t kStepPhaseCount = 3;

std::string_view checkpointName(Checkpointing c, int everyK = 1); ///< "none", "full", "every:2"
std::string_view precisionName(Precision p);                      ///< "fp32", "amp-bf16", ...
std::string_view optimizerName(OptimizerKind o);                  ///< "adamw", "adam8bit", ...
std::string_view offloadName(Offload o);                          ///< "none", "optimizer", "params"
std::string_view provenanceName(Provenance p);                    ///< "measured", ...
std::string_view stepPhaseName(StepPhase p);                      ///< "start_of_backward", ...
std::string_view stepPhaseLabel(StepPhase p);                     ///< "start of backward", ...

std::optional<Precision> precisionFromName(std::string_view s);
std::optional<OptimizerKind> optimizerFromName(std::string_view s);
std::optional<Offload> offloadFromName(std::string_view s);
/// "none", "selective", "full", "every:K" (K >= 1).
bool checkpointFromName(std::string_view s, Checkpointing& out, int& everyK);

/// Everything the user can move. `microBatch`, `seq` and `devices` are per device.
struct LeverConfig {
    int microBatch = 1;
    int accum = 1;
    int seq = 1;
    Checkpointing checkpoint = Checkpointing::None;
    int checkpointEvery = 1; ///< EveryK: checkpoint one layer in every K
    Precision precision = Precision::AmpBf16;
    OptimizerKind optimizer = OptimizerKind::AdamW;
    int zero = 0;    ///< 0 = plain data parallel; 1..3 ZeRO stage (FSDP FULL_SHARD = 3)
    int devices = 1; ///< data-parallel / sharding degree N; 0 in a measured config: unknown
    Offload offload = Offload::None;
    bool flashAttention = true;
    double trainableFraction = 1.0; ///< LoRA / freezing: P_t / P; 1 = full fine-tune
    bool expandableSegments = false;

    int64_t effectiveBatch() const { return int64_t(microBatch) * accum * devices; }
    /// The degree memory is sharded over: an unknown (0) measured count projects as one device,
    /// as a ladder's rungs carry it, so 0 and 1 are the same move.
    int deviceCount() const { return devices > 1 ? devices : 1; }
    /// The same ZeRO stage, device count and offload: the state is split the same way.
    bool shardsLike(const LeverConfig& o) const
    {
        return zero == o.zero && deviceCount() == o.deviceCount() && offload == o.offload;
    }
    bool operator==(const LeverConfig&) const = default;
    /// Lever settings that differ from `base`, as "name=value" strings (for ladders, JSON);
    /// `microBatchUnits` > 0 words the micro-batch as a ratio of the measured run.
    std::vector<std::string> differences(const LeverConfig& base, int microBatchUnits = 0) const;
};

/// Bytes per parameter of each model state for a precision and optimizer.
struct StateBytes {
    double weights = 0, master = 0, grads = 0, optimizer = 0, optimizerTemp = 0;
};
StateBytes stateBytes(Precision p, OptimizerKind o);
/// Bytes moved per trainable parameter by one optimizer step.
double optimizerBytesMoved(Precision p, OptimizerKind o);
/// Saved-activation size relative to 16-bit activations (fp32 stores ~1.8x, [G]).
double activationFactor(Precision p);
/// Bytes an attention call saves per score (docs/whatif-model.md, "The terms"): `n`
/// score-sized tensors (4 B in fp32, 2 B in 16 bits) and perhaps a bool dropout mask (1 B).
/// Under CUDA autocast the softmax stays fp32 and the next matmul saves a 16-bit cast of the
/// last of the n; where that one is the only one and no mask, it is the softmax's own output,
/// which its backward keeps in fp32 beside the cast: 4(n-1) + 2 + m [+ 4].
double attentionScoreBytes(Precision p, int n, bool dropoutMask);

/// Transformer dimensions (analytic mode, and optional help for calibrated mode).
struct ModelDims {
    std::string name;
    double params = 0; ///< P
    int layers = 0, hidden = 0, heads = 0, ffn = 0, vocab = 0;
    double actCoeff = 34.0; ///< saved bytes per layer = s*b*h*(actCoeff + 5*a*s/h) (Korthikanti)
    int seq = 2048, microBatch = 1; ///< the preset's typical training shape

    bool valid() const { return params > 0 && layers > 0 && hidden > 0 && heads > 0 && vocab > 0; }
    /// Params of one decoder layer (the ZeRO-3 gathered unit).
    double layerParams() const;
};
/// gpt2, llama2-7b, llama3-8b, llama2-70b (alias 70b).
std::optional<ModelDims> modelPreset(std::string_view name);
std::vector<std::string> modelPresetNames();
/// Parameter count from dimensions (GPT form when ffn == 0: 12*L*h^2 + V*h).
double estimateParams(int layers, int hidden, int ffn, int vocab);

/// A device: capacity and the speeds the step-time model needs.
struct DeviceSpec {
    std::string name;
    int64_t capacityBytes = 0;
    double peakFlops = 989e12;  ///< dense bf16
    double hbmBandwidth = 3350e9;
    double linkBandwidth = 450e9; ///< NVLink per GPU (config value)
    double pcieBandwidth = 50e9;  ///< achievable per direction
    bool guessed = false;         ///< speeds not from the reference's sourced table
};
/// "24gib", "40gib", "48gib", "80gib" (H100), "a100-80gb", "94gib", "141gib" (H200), "h100".
std::optional<DeviceSpec> devicePreset(std::string_view name);
std::vector<std::string> devicePresetNames();
/// The best matching speed preset for a capacity, named by its size where no preset has it;
/// 0 or less: the capacity is unknown (80 GiB speeds, no verdict).
DeviceSpec deviceForCapacity(int64_t capacityBytes);

/// The editable constants, each marked as a guess or sourced.
/// The share of a device's capacity a fit keeps free for what a snapshot does not count exactly
/// (workspaces, NCCL, the band's own error), by default, in every view: the what-if's verdicts,
/// check --fit and the budget's policy.
inline constexpr double kDefaultFitMargin = 0.10;

struct WhatIfConstants {
    double mfuMax = 0.45;          ///< [G]
    double nHalf = 256;            ///< tokens [G]
    double logitsBytes = 8;        ///< c_V bytes per b*s*V element [G]
    /// The analytic mode's high reading of the saved bytes per s*b*h and layer: eager layers
    /// (the CPU matrix's dense transformers save 41 to 79, tools/activation_coeff.py) [S]
    double actCoeffEager = 79;
    double overlap = 0.7;          ///< communication/compute overlap rho [G]
    double hbmEfficiency = 0.8;    ///< eta_hbm [G]
    double busFactor = 0.75;       ///< achievable NVLink busBW / config [G]
    double hostBandwidth = 100e9;  ///< host DRAM for CPU Adam [G]
    double contextBytes = 1.0 * (1ull << 30);     ///< C, memory outside the allocator [G]
    double contextHighBytes = 2.0 * (1ull << 30); ///< C's high end [G]
    double fragRatio = 0.05;          ///< F / (A + T) without expandable segments [G]
    double fragRatioExpandable = 0.02; ///< with [G]
    /// The free share a verdict requires: kDefaultFitMargin for both by default, so that the
    /// what-if, the ladder, the diagnosis, check --fit and the budget give one verdict on a run
    /// as recorded. Lower marginSame to trust a batch-only move more.
    double marginSame = kDefaultFitMargin;       ///< when only b / k changed [G]
    double marginStructural = kDefaultFitMargin; ///< otherwise [G]
    /// One margin asked for (check --fit's, whatif --margin), whatever the target moves.
    void setMargin(double m) { marginSame = marginStructural = m; }
    double fp32Slowdown = 2.5;      ///< fp32 vs mixed precision step time [G]
    double flashSpeedup = 2.0;      ///< attention FLOPs run this much faster with FlashAttention [G]
    double offloadBucketElems = 5e8; ///< DeepSpeed reduce_bucket_size [S]
    double foreachTimeFactor = 1.0;  ///< foreach optimizer bytes moved vs fused [G]
    /// A pure-precision replay to fewer bytes: share of its peak that ops computing in fp32
    /// inside the 16-bit model (and their casts) may add, which the wider trace cannot show [G]
    double unseenUpcastShare = 0.08;

    struct Entry {
        const char* key;
        const char* label;
        double WhatIfConstants::* member;
        const char* unit;
        bool guess;
        const char* source;
    };
    static const std::vector<Entry>& entries();
};

/// One term of a phase's memory.
struct Component {
    std::string name;  ///< "weights", "master", "gradients", ... (JSON keys)
    double bytes = 0;  ///< central value
    double relErr = 0; ///< relative uncertainty, each side
    Provenance provenance = Provenance::Modelled;
    double low = 0, high = 0; ///< explicit band (fragmentation, context); 0/0 = from relErr
    double relErrHigh = 0;    ///< the high side's, where larger (Term::relErrHigh)
    double highErr() const { return relErr > relErrHigh ? relErr : relErrHigh; }
};

struct PhaseProjection {
    StepPhase phase = StepPhase::StartOfBackward;
    bool present = true; ///< a forward-only trace projects only the forward
    std::vector<Component> components;
    double allocated = 0; ///< tensors only
    double allocatedLow = 0, allocatedHigh = 0; ///< the tensors' band (what a trace's allocated curve shows)
    double total = 0;     ///< + fragmentation + outside the allocator
    double low = 0, high = 0;
    double measured = -1; ///< measured total at the calibration point (calibrated mode)
    int64_t measuredEvent = -1;    ///< the event it was read at (-1: none)
    std::string measuredEventPhase; ///< that event's phase ("backward", "forward", ...)
};

/// Step time, itemised: seconds per optimizer step.
struct StepTime {
    double compute = 0;       ///< forward + backward at the measured (or modelled) utilisation
    double utilisation = 0;   ///< extra from a smaller micro-batch's lower utilisation
    double recompute = 0;     ///< activation checkpointing
    double communication = 0; ///< exposed part
    double offload = 0;       ///< exposed part
    double optimizer = 0;     ///< the optimizer step itself
    double total = 0;
    double tokensPerStep = 0; ///< all devices
    double tokensPerSecond = 0;
    double relative = 1;      ///< total / the baseline's total
    /// The trace gave a step time to calibrate on (or the model is analytic): without one
    /// the figures above only rank the ladder's candidates and are never shown.
    bool known = true;
};

/// Allocations of one line whose evidence allows several laws (docs/whatif-model.md,
/// "Ambiguities"): what reading them each other way would make of the projected peak.
struct ProjectedAmbiguity {
    std::string where;            ///< the innermost user frame of their stack
    int64_t sizeEach = 0, count = 0;
    std::string central;          ///< the law taken, "b*s"
    std::vector<std::string> readings; ///< every law allowed, "b*s", "b*s^2"
    std::string evidence;         ///< why the central law: "stack", "size"
    double peakIfLowest = 0, peakIfHighest = 0; ///< the projected allocated peak, read each way
    bool shapeRecorded = false; ///< their recorded shape allows every reading: only a run settles it
};

/// The projected run's requests through the caching-allocator model (core/whatif/projection/projectedallocator.h).
struct SimulatedReserved {
    int64_t peak = 0, peakEvent = -1; ///< reserved bytes; the event of the measured trace
    int64_t capacity = 0;             ///< what the allocator could reserve; 0 unlimited
    bool expandableSegments = false;
    /// The first refused request, if any (oomSize > 0): oomEvent -1 is one of the requests
    /// alive before the trace's first event (what was allocated before the recording began).
    int64_t oomEvent = -1, oomSize = 0, oomReserved = 0;
    bool refused() const { return oomSize > 0; }
};

enum class Verdict : uint8_t { Fits, Tight, DoesNotFit, Unknown };
std::string_view verdictName(Verdict v); ///< "fits", "tight", "does not fit", "unknown capacity"

/// The largest margin a band whose high end is `peakHigh` fits `capacity` with: the share of the
/// capacity less `context` (what lies outside the allocator, for which no margin is kept) that
/// it leaves free. A band fits with margin m exactly when this is at least m; below 0, it fits
/// with none.
double marginLeft(double peakHigh, double context, double capacity);
/// marginLeft solved for the high end: the most a band may reach and fit with `margin`;
/// none where `context` fills the capacity.
std::optional<double> highEndLimit(double context, double capacity, double margin);
/// Projection::marginLeft of a run that fits with no margin at all.
inline constexpr double kFitsNoMargin = -1.0;

struct Projection {
    LeverConfig config;
    int microBatchUnits = 0; ///< > 0: config.microBatch is a ratio of the measured run's (batchratio.h)
    std::array<PhaseProjection, kStepPhaseCount> phases;
    StepPhase peakPhase = StepPhase::StartOfBackward;
    /// The measured run had no backward: its first moment is the forward's peak (phaseLabel).
    bool forwardOnly = false;
    double peak = 0, peakLow = 0, peakHigh = 0; ///< totals incl. fragmentation and context
    double peakAllocated = 0, peakAllocatedLow = 0, peakAllocatedHigh = 0; ///< tensors only, the highest phase
    double capacity = 0;
    double margin = 0.1;
    Verdict verdict = Verdict::Unknown;
    /// The largest margin the verdict would be Fits with (::marginLeft of the band, kFitsNoMargin
    /// where the simulated allocator or an OOM's whole step rules a fit out): a store can judge
    /// the run again at another margin and agree with this verdict at this one (the budget).
    double marginLeft = kFitsNoMargin;
    double judgedContext = 0; ///< the context marginLeft leaves out, the band's high end of it
    bool fits = false;
    StepTime time;
    std::vector<std::string> notes; ///< e.g. "the peak is in the optimizer step: a longer sequence does not move it"
    /// The allocated peak is the replay of every allocation of the trace with its law
    /// (a target that moves only the micro-batch and the sequence).
    bool replayed = false;
    int64_t replayPeakEvent = -1;   ///< the event of the projected peak in the measured trace
    int64_t measuredPeakEvent = -1; ///< the event of the replayed measured peak
    /// Activation checkpointing replayed as moves of the history over this many blocks (0: not).
    int replayCheckpointedBlocks = 0;
    ReplayTarget replayTarget; ///< what the replay projected (when `replayed`)
    std::vector<ProjectedAmbiguity> ambiguities;
    std::optional<SimulatedReserved> simulated; ///< filled on request (simulateReserved)
    /// The verdict the allocated peak and the terms' fragmentation gave, where the simulation
    /// of the projected run's requests changed it (simulateReserved); Unknown: not changed.
    Verdict verdictByRatio = Verdict::Unknown;
    /// The terms model's own peak where the replay gave the headline (`replayed`): kept, never
    /// overwritten, shown labelled as the terms'. Equal to the headline otherwise.
    double termsPeak = 0, termsPeakAllocated = 0;
    StepPhase termsPeakPhase = StepPhase::StartOfBackward;
    /// What makes up the headline peak, from the headline's own engine (describePeak,
    /// peakbreakdown.h): the parts sum to `peak`. Empty until described.
    std::vector<Component> atPeak;
    int64_t atPeakEvent = -1; ///< the replay's peak event it was read at; -1: the terms' phase
    /// The calibrated step was cut short by an OOM and the peak is the whole step's (cutstep.h):
    /// the breakdown adds what the recording never reached.
    bool wholeStepFromCut = false;
    /// Judged on the OOM record's own capacity (the allocator's reserved + the device's free
    /// memory), which leaves out what lies outside the allocator: the peak counts none of it.
    bool outsideLeftOut = false;

    const PhaseProjection& peakProjection() const { return phases[size_t(peakPhase)]; }
    /// stepPhaseLabel, except that a forward-only run's first moment is its "forward".
    std::string_view phaseLabel(StepPhase p) const;
    double componentAt(StepPhase p, std::string_view name) const;
};

} // namespace headroom
