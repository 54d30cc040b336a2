// SPDX-License-Identifier: MIT
#pragma once

// The standing budget's policy (docs/budget.md, "The policy"): runs grouped by configuration,
// and a configuration validated only by a run of it that processed its worst-case step, did
// not run out of memory and fit its capacity with the margin. Assembled here once; the CLI's
// `budget status` and `check --budget`, MCP and the GUI's Budget view render it.

#include "core/budget/budgetrun.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct BudgetPolicy {
    /// The fields that make two runs the same configuration; the others are kept, not compared.
    std::vector<std::string> keyFields = defaultKeyFields();
    double margin = kDefaultFitMargin;

    static std::vector<std::string> defaultKeyFields();
};

/// Why a run does not validate its configuration (None: it does), in the order a run gets
/// closer to validating: each later reason means the earlier ones were passed.
enum class RunShortfall { Oomed, NoWorstCaseDeclared, StepSizesUnknown, NotWorstCase, NoCapacity, OverMargin, None };

struct RunVerdict {
    RunShortfall shortfall = RunShortfall::None;
    std::optional<int64_t> limit; ///< capacity * (1 - margin), where the capacity is known
    /// The largest margin the run passes with, where the capacity is known: its projection's
    /// (check --fit's figure, `byProjection`), else the share its peak allocated leaves free.
    std::optional<double> marginLeft;
    bool byProjection = false;
    /// The most the judged peak may be and pass the margin: `limit` for the peak allocated; for
    /// the projection's high end, context + (capacity - context) x (1 - margin), where the
    /// store kept the context (none otherwise).
    std::optional<int64_t> judgedLimit;
};

struct ConfigStatus {
    std::string key;      ///< "micro_batch=4;precision=bf16;..." over the key fields present
    BudgetConfig fields;  ///< the key's fields and values
    std::vector<BudgetRun> runs; ///< oldest first
    std::vector<RunVerdict> verdicts; ///< parallel to runs
    int64_t worstPeak = 0;           ///< the highest peak allocated of any run
    int64_t worstDevicePeak = 0;     ///< the highest BudgetRun::devicePeak of any run
    std::optional<int64_t> capacity; ///< the smallest capacity any run names
    std::optional<int64_t> worstCaseTokens; ///< the largest declared by any run
    std::optional<int64_t> largestStepTokens; ///< the largest any run processed
    /// Validated: the index of the newest run that validates, with no OOM after it.
    std::optional<size_t> validatedBy;
    std::optional<int64_t> validatedPeak; ///< the highest peak of the runs that validate
    /// Not validated: the verdict of the run that came closest (the newest of those), or the
    /// OOM after validation that revoked it.
    std::optional<size_t> closestRun;
    std::optional<double> trend; ///< newest run's peak against the oldest's, as a fraction

    bool validated() const { return validatedBy.has_value(); }
    std::optional<int64_t> roomLeft() const; ///< capacity minus the worst device peak
};

/// `config`'s key under `policy`: "field=value;..." over the key fields it has, or
/// kNoConfigurationKey when it has none.
std::string budgetConfigKey(const BudgetConfig& config, const BudgetPolicy& policy);
inline constexpr const char* kNoConfigurationKey = "(no configuration recorded)";
/// The configuration `run` is grouped in: its key, or where it has no key field, its own file
/// (runs that say nothing of their configuration are not the same job).
std::string budgetGroupKey(const BudgetRun& run, const BudgetPolicy& policy);

/// Whether `run` validates a configuration whose worst case is `worstCaseTokens`.
RunVerdict judgeRun(const BudgetRun& run, std::optional<int64_t> worstCaseTokens, const BudgetPolicy& policy);

/// Every configuration of `runs`, by key; with `only`, those whose key fields agree with it.
std::vector<ConfigStatus> assessBudget(const std::vector<BudgetRun>& runs, const BudgetPolicy& policy,
                                       const BudgetConfig& only = {});

/// `check --budget`: one run (its configuration and peak allocated) against the store's runs.
/// It passes when its configuration is validated and the peak is at most the validated peak
/// times 1 + maxGrowth.
struct BudgetGate {
    std::string key;                    ///< the run's configuration
    std::optional<ConfigStatus> status; ///< none: the store holds no run of that configuration
    std::optional<int64_t> limit;       ///< the validated peak x (1 + maxGrowth), when validated
    bool passed = false;
};
BudgetGate gateRun(const std::vector<BudgetRun>& runs, const BudgetConfig& config, int64_t peak,
                   const BudgetPolicy& policy, double maxGrowth);

/// "OOMed at iteration 3", "never run on its worst-case step (largest step 2048 of 4096
/// tokens)", ...: one sentence for the CLI, MCP and the GUI alike; "validated by ..." when it is.
std::string describeStatus(const ConfigStatus& status);
/// "oomed", "no_worst_case_declared", ..., "none": JSON's word for a shortfall.
const char* runShortfallKey(RunShortfall s);

} // namespace headroom
