// SPDX-License-Identifier: MIT
#include "core/budget/budgetpolicy.h"

#include "core/util/units.h"
#include "core/whatif/query/fitjudgement.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace headroom {

std::vector<std::string> BudgetPolicy::defaultKeyFields()
{
    // What changes a step's memory (docs/budget.md): the model and its shapes, the precision
    // and the optimizer, checkpointing, the devices it is sharded over and the allocator.
    return {"model", "micro_batch", "seq", "precision", "optimizer", "checkpointing", "devices", "zero", "allocator"};
}

std::optional<int64_t> ConfigStatus::roomLeft() const
{
    return capacity ? std::optional<int64_t>(*capacity - worstDevicePeak) : std::nullopt;
}

std::string budgetConfigKey(const BudgetConfig& config, const BudgetPolicy& policy)
{
    std::string key;
    for (const std::string& f : policy.keyFields) {
        const auto it = config.find(f);
        if (it != config.end())
            key += (key.empty() ? "" : ";") + f + "=" + it->second;
    }
    return key.empty() ? kNoConfigurationKey : key;
}

std::string budgetGroupKey(const BudgetRun& run, const BudgetPolicy& policy)
{
    const std::string key = budgetConfigKey(run.config, policy);
    if (key != kNoConfigurationKey)
        return key;
    return key + ": " + (run.file.empty() ? run.runId : run.file);
}

namespace {

/// The high end that leaves exactly `margin` free, where the store kept the context.
std::optional<int64_t> projectedLimit(const BudgetRun::Projected& p, int64_t capacity, double margin)
{
    const std::optional<double> limit =
        p.context ? highEndLimit(double(*p.context), double(capacity), margin) : std::nullopt;
    return limit ? std::optional<int64_t>(int64_t(std::floor(*limit))) : std::nullopt;
}

} // namespace

RunVerdict judgeRun(const BudgetRun& run, std::optional<int64_t> worstCaseTokens, const BudgetPolicy& policy)
{
    RunVerdict v;
    if (run.capacity && *run.capacity > 0) {
        v.limit = int64_t(std::floor(double(*run.capacity) * (1.0 - policy.margin)));
        v.byProjection = run.projected.has_value();
        v.marginLeft = v.byProjection ? run.projected->marginLeft : allocatedMarginLeft(run.peakAllocated, *run.capacity);
        v.judgedLimit = !v.byProjection ? v.limit : projectedLimit(*run.projected, *run.capacity, policy.margin);
    }
    // As check --fit judges the same file at the same capacity and margin (fitjudgement.h):
    // the projection's margin left where there is one, else the peak allocated against the limit.
    const bool overMargin = v.byProjection ? *v.marginLeft < policy.margin : v.limit && run.peakAllocated > *v.limit;
    if (run.oom)
        v.shortfall = RunShortfall::Oomed;
    else if (!worstCaseTokens)
        v.shortfall = RunShortfall::NoWorstCaseDeclared;
    else if (!run.maxStepTokens)
        v.shortfall = RunShortfall::StepSizesUnknown;
    else if (*run.maxStepTokens < *worstCaseTokens)
        v.shortfall = RunShortfall::NotWorstCase;
    else if (!v.limit)
        v.shortfall = RunShortfall::NoCapacity;
    else if (overMargin)
        v.shortfall = RunShortfall::OverMargin;
    return v;
}

namespace {

template <typename T>
void keepMax(std::optional<T>& to, std::optional<T> v)
{
    if (v && (!to || *v > *to))
        to = v;
}

void settle(ConfigStatus& s, const BudgetPolicy& policy)
{
    for (const BudgetRun& r : s.runs) {
        s.worstPeak = std::max(s.worstPeak, r.peakAllocated);
        s.worstDevicePeak = std::max(s.worstDevicePeak, r.devicePeak());
        if (r.capacity && (!s.capacity || *r.capacity < *s.capacity))
            s.capacity = r.capacity;
        keepMax(s.worstCaseTokens, r.worstCaseTokens);
        keepMax(s.largestStepTokens, r.maxStepTokens);
    }
    for (size_t i = 0; i < s.runs.size(); ++i) {
        s.verdicts.push_back(judgeRun(s.runs[i], s.worstCaseTokens, policy));
        const RunShortfall f = s.verdicts[i].shortfall;
        if (f == RunShortfall::None) {
            s.validatedBy = i;
            keepMax(s.validatedPeak, std::optional<int64_t>(s.runs[i].peakAllocated));
        } else if (f == RunShortfall::Oomed && s.validatedBy) {
            // An OOM after validation revokes it: the worst case was not the worst.
            s.validatedBy.reset();
            s.validatedPeak.reset();
            s.closestRun = i;
        }
    }
    if (s.validatedBy)
        return;
    if (s.closestRun)
        return;
    size_t best = 0;
    for (size_t i = 1; i < s.runs.size(); ++i)
        if (s.verdicts[i].shortfall >= s.verdicts[best].shortfall)
            best = i;
    s.closestRun = best;
}

} // namespace

std::vector<ConfigStatus> assessBudget(const std::vector<BudgetRun>& runs, const BudgetPolicy& policy,
                                       const BudgetConfig& only)
{
    std::map<std::string, ConfigStatus> byKey;
    for (const BudgetRun& r : runs) {
        bool match = true;
        for (const auto& [k, v] : only) {
            const auto it = r.config.find(k);
            match = match && it != r.config.end() && it->second == v;
        }
        if (!match)
            continue;
        ConfigStatus& s = byKey[budgetGroupKey(r, policy)];
        s.runs.push_back(r);
    }
    std::vector<ConfigStatus> out;
    for (auto& [key, s] : byKey) {
        s.key = key;
        for (const std::string& f : policy.keyFields)
            if (auto it = s.runs.front().config.find(f); it != s.runs.front().config.end())
                s.fields[f] = it->second;
        std::stable_sort(s.runs.begin(), s.runs.end(),
                         [](const BudgetRun& a, const BudgetRun& b) { return a.recordedAt < b.recordedAt; });
        settle(s, policy);
        if (s.runs.size() > 1 && s.runs.front().peakAllocated > 0)
            s.trend = double(s.runs.back().peakAllocated - s.runs.front().peakAllocated) /
                      double(s.runs.front().peakAllocated);
        out.push_back(std::move(s));
    }
    return out;
}

BudgetGate gateRun(const std::vector<BudgetRun>& runs, const BudgetConfig& config, int64_t peak,
                   const BudgetPolicy& policy, double maxGrowth)
{
    BudgetGate g;
    g.key = budgetConfigKey(config, policy);
    std::vector<BudgetRun> same;
    for (const BudgetRun& r : runs)
        if (budgetConfigKey(r.config, policy) == g.key)
            same.push_back(r);
    if (same.empty())
        return g;
    g.status = assessBudget(same, policy).front();
    if (!g.status->validated())
        return g;
    g.limit = int64_t(std::floor(double(*g.status->validatedPeak) * (1.0 + maxGrowth)));
    g.passed = peak <= *g.limit;
    return g;
}

const char* runShortfallKey(RunShortfall s)
{
    switch (s) {
    case RunShortfall::Oomed: return "oomed";
    case RunShortfall::NoWorstCaseDeclared: return "no_worst_case_declared";
    case RunShortfall::StepSizesUnknown: return "step_sizes_unknown";
    case RunShortfall::NotWorstCase: return "not_worst_case";
    case RunShortfall::NoCapacity: return "no_capacity";
    case RunShortfall::OverMargin: return "over_margin";
    case RunShortfall::None: return "none";
    }
    return "none";
}

namespace {

std::string runName(const BudgetRun& r)
{
    return (r.file.empty() ? r.runId : r.file) + " (device " + std::to_string(r.device) + ", " + r.recordedAt + ")";
}

std::string shortfallText(const BudgetRun& r, const RunVerdict& v, const ConfigStatus& s)
{
    switch (v.shortfall) {
    case RunShortfall::Oomed:
        return "ran out of memory" + (r.oomIteration ? " at iteration " + std::to_string(*r.oomIteration) : std::string()) +
               " in " + runName(r);
    case RunShortfall::NoWorstCaseDeclared:
        return "no worst-case step declared for it (record with --config worst_case_tokens=N, the largest step its "
               "data can produce)";
    case RunShortfall::StepSizesUnknown:
        return "no run recorded the size of its steps (step_tokens), so none is known to have met its worst case";
    case RunShortfall::NotWorstCase:
        return "never run on its worst-case step: the largest step recorded is " +
               std::to_string(s.largestStepTokens.value_or(0)) + " of " + std::to_string(s.worstCaseTokens.value_or(0)) +
               " tokens";
    case RunShortfall::NoCapacity:
        return "ran its worst-case step, but no capacity is known to judge it against (record with --capacity)";
    case RunShortfall::OverMargin:
        if (v.byProjection)
            return "ran its worst-case step without an OOM, but projected on the device (as check --fit projects "
                   "it: the CUDA context and the allocator counted) it needs " + formatBytes(r.projected->peak) +
                   " (up to " + formatBytes(r.projected->peakHigh) + ") on a device of " +
                   formatBytes(r.capacity.value_or(0)) + ", which leaves less than the margin free, in " + runName(r);
        return "ran its worst-case step without an OOM, but its peak " + formatBytes(r.peakAllocated) +
               " leaves less than the margin: at most " + formatBytes(v.limit.value_or(0)) + " of " +
               formatBytes(r.capacity.value_or(0)) + " in " + runName(r);
    case RunShortfall::None:
        break;
    }
    return "validated by " + runName(r);
}

} // namespace

std::string describeStatus(const ConfigStatus& s)
{
    if (s.validatedBy) {
        const BudgetRun& r = s.runs[*s.validatedBy];
        return "validated by " + runName(r) + ": its worst-case step peaked at " + formatBytes(r.peakAllocated) +
               (r.projected ? " allocated, " + formatBytes(r.projected->peak) + " on the device as check --fit projects it"
                            : std::string());
    }
    if (!s.closestRun)
        return "not validated: no runs";
    const size_t i = *s.closestRun;
    return "not validated: " + shortfallText(s.runs[i], s.verdicts[i], s);
}

} // namespace headroom
