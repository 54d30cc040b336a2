// SPDX-License-Identifier: MIT
#pragma once

// "Make it fit" (docs/whatif-model.md, "The terms"): walk the levers in order of currency, aimed at
// the bottleneck, and stop at the first configuration whose high estimate fits.

#include "core/replay/allocatorsimconfig.h"
#include "core/whatif/calibration/cutstep.h"
#include "core/whatif/projection/whatifprojection.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct Calibration;

/// What a lever costs: engineering time, throughput, fidelity, hardware.
enum class Currency : uint8_t { Engineering, Throughput, Fidelity, Hardware };
std::string_view currencyName(Currency c); ///< "engineering", "throughput", "fidelity", "hardware"
/// The order the ladder spends them in when told nothing else (LadderOptions::currencyOrder).
inline constexpr std::array<Currency, 4> kDefaultCurrencyOrder = {Currency::Engineering, Currency::Throughput,
                                                                  Currency::Hardware, Currency::Fidelity};
std::optional<Currency> currencyFromName(std::string_view s);

/// An allocator setting that the replay of the recorded requests found to avoid the OOM
/// (AllocatorVerdict). It costs no code and no throughput, so it is the first rung when it fits.
struct AllocatorRungInput {
    std::string setting;      ///< PYTORCH_CUDA_ALLOC_CONF value, e.g. "expandable_segments:True"
    bool avoidsOom = false;
    int64_t reservedPeak = 0; ///< simulated under the setting
    int64_t capacity = 0;     ///< the allocator's capacity the replay ran against
    std::string evidence;     ///< what the replay found, in words
};

struct LadderOptions {
    /// Spend these first (someone with spare GPUs puts Hardware first). Empty: the default order.
    std::vector<Currency> currencyOrder;
    int availableDevices = 1;    ///< sharding rungs only when > 1
    bool allowResultChanging = true; ///< shorter sequences, LoRA
    /// The diagnosis found an outlier batch, or one device far above the others: a batch
    /// budget is the ladder's rung 0, before any capacity lever.
    bool outlierBatch = false;
    /// The file's optimizer state breaks an invariant (categorychecks.h): the levers that
    /// shrink it lack their premise and are not offered.
    bool optimizerStateSuspect = false;
    /// The replay's answer for the run as recorded; only meaningful for the recorded levers.
    std::optional<AllocatorRungInput> allocator;
    /// Where the ladder came from a trace: a rung or an alternative that moves a lever whose
    /// measured value the trace does not tell is left out, and a warning says what would let
    /// it in (the whatif refuses such a target; the ladder must not price it either).
    const Calibration* calibration = nullptr;
    /// The file's allocator settings: each replayed candidate's requests are simulated and its
    /// verdict is the simulation's (judgeBySimulation), as `whatif` judges the same target.
    std::optional<AllocatorConfig> simulate;
    /// The calibrated iteration is one an OOM cut short: every projection is of the whole step
    /// (cutstep.h), and a rung fits only when the whole step's high end does.
    std::optional<CutStep> cutStep;
};

/// What a rung is: a lever of the model, an allocator setting the replay found, or a bound
/// on the batch that must come before any capacity lever (an outlier batch or device).
enum class RungKind : uint8_t { Lever, AllocatorSetting, BatchBudget };

struct Rung {
    RungKind kind = RungKind::Lever;
    bool activation = false;         ///< a lever on the activations (micro-batch, checkpointing)
    std::string title;               ///< "8-bit optimizer"
    LeverConfig config;              ///< cumulative
    std::vector<std::string> levers; ///< what this rung changes, "name=value"
    Projection projection;
    std::vector<std::pair<std::string, std::string>> currencies; ///< currency -> cost in words
    std::vector<std::string> warnings;
    bool changesResult = false;
    bool numericalRisk = false;
    /// Set when the rung is an allocator setting: its peak is the replay's reserved peak of the
    /// recorded requests, not the model's projection.
    std::string allocatorSetting;
};

struct LadderAlternative {
    std::string currency; ///< what it spends
    std::string title;
    LeverConfig config;
    Projection projection;
};

struct Ladder {
    Projection start;
    std::string bottleneck; ///< "static memory" or "activations"
    std::vector<Rung> rungs;
    int firstFit = -1;
    bool fitsAsIs = false;
    bool needsDifferentPlan = false;
    std::vector<std::string> warnings;
    std::vector<LadderAlternative> alternatives;
};

Ladder buildLadder(const WhatIfBaseline& base, const LeverConfig& start, const WhatIfConstants& k,
                   const DeviceSpec& device, const LadderOptions& options = {});

} // namespace headroom
