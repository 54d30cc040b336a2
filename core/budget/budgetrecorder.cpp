// SPDX-License-Identifier: MIT
#include "core/budget/budgetrecorder.h"

#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/budget/budgetpolicy.h"
#include "core/whatif/calibration/traceconfig.h"
#include "core/whatif/query/fitjudgement.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace headroom {

namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

/// A count >= 0 written in full ("4096"); nullopt for anything else.
std::optional<int64_t> countOf(const std::string& text)
{
    try {
        size_t used = 0;
        const long long v = std::stoll(text, &used);
        if (used == text.size() && v >= 0)
            return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::optional<int64_t> integerValue(const BudgetConfig& c, const std::string& key)
{
    const auto it = c.find(key);
    return it == c.end() ? std::nullopt : countOf(it->second);
}

/// The largest of a comma-separated list of step sizes ("512,512,1024"), as the recorders
/// write `step_tokens`; else `max_step_tokens`.
std::optional<int64_t> maxStepTokens(const BudgetConfig& c)
{
    if (auto v = integerValue(c, "max_step_tokens"))
        return v;
    const auto it = c.find("step_tokens");
    if (it == c.end())
        return std::nullopt;
    std::optional<int64_t> best;
    size_t from = 0;
    while (from <= it->second.size()) {
        const size_t comma = std::min(it->second.find(',', from), it->second.size());
        if (auto v = countOf(it->second.substr(from, comma - from)))
            best = std::max(best.value_or(0), *v);
        from = comma + 1;
    }
    return best;
}

void addMeasured(BudgetConfig& c, const LoadedTrace& trace, size_t di)
{
    std::vector<MeasuredItem> items;
    readTraceConfig(trace, di, &items);
    for (const MeasuredItem& m : items)
        if (!m.value.empty() && (m.how == "read" || m.how == "stated"))
            c[m.key] = m.value;
}

/// The peak's iteration among `peaks`, and whether an OOM record lies in one.
void addIterations(BudgetRun& r, const DeviceAnalysis& a, const DeviceData& d)
{
    int64_t worst = -1;
    for (const IterationPeak& p : a.iterationPeaks) {
        r.iterationPeaks.push_back(p.peakBytes);
        if (p.peakBytes > worst) {
            worst = p.peakBytes;
            r.worstIteration = p.iteration;
        }
    }
    r.oom = !d.ooms.empty();
    if (r.oom) {
        const int it = a.phases.iterationOf(d.ooms.front().eventIndex);
        if (it >= 0)
            r.oomIteration = it;
    }
}

/// check --fit's projection of the run at its capacity, where the what-if could calibrate.
void addProjection(BudgetRun& r, const std::shared_ptr<const LoadedTrace>& trace, size_t di, const DeviceAnalysis& a)
{
    if (!r.capacity)
        return;
    // What is kept does not depend on the margin: the policy judges marginLeft at its own.
    const FitJudgement j = judgeFit(trace, di, a, *r.capacity, kDefaultFitMargin);
    if (j.projected)
        r.projected = BudgetRun::Projected{int64_t(j.peak), int64_t(j.peakHigh), j.marginLeft, int64_t(j.judgedContext)};
}

} // namespace

BudgetConfig parseBudgetPairs(const std::vector<std::string>& pairs)
{
    BudgetConfig c;
    for (const std::string& p : pairs) {
        const size_t eq = p.find('=');
        if (eq == std::string::npos || eq == 0)
            throw std::invalid_argument("expected KEY=VALUE, got '" + p + "'");
        c[lower(p.substr(0, eq))] = p.substr(eq + 1);
    }
    return c;
}

BudgetConfig budgetConfigOf(const LoadedTrace& trace, size_t di)
{
    BudgetConfig c;
    for (const auto& [k, v] : trace.snapshot.runConfig)
        c[lower(k)] = v;
    addMeasured(c, trace, di);
    // What the user set (PYTORCH_CUDA_ALLOC_CONF), not every default the snapshot lists, so
    // the recorder's run metric, which reads the same variable, keys the same configuration.
    for (const auto& [k, v] : trace.snapshot.allocatorSettings)
        if (k == "PYTORCH_CUDA_ALLOC_CONF" && !v.empty())
            c["allocator"] = v;
    c["device_type"] = trace.snapshot.devices[di].deviceType;
    return c;
}

std::vector<BudgetRun> budgetRunsOf(const std::shared_ptr<const LoadedTrace>& tracePtr, const BudgetRecordOptions& o)
{
    const LoadedTrace& trace = *tracePtr;
    std::vector<BudgetRun> runs;
    const std::string now = budgetTimestampNow();
    for (size_t di = 0; di < trace.snapshot.devices.size(); ++di) {
        const DeviceData& d = trace.snapshot.devices[di];
        const MemoryTimeline& tl = trace.timelines[di];
        if (d.trace.count() == 0 && d.segments.empty())
            continue;
        BudgetRun r;
        r.device = d.device;
        r.runId = o.fileHash + "/" + std::to_string(d.device);
        r.fileHash = o.fileHash;
        r.file = o.file;
        r.config = budgetConfigOf(trace, di);
        for (const auto& [k, v] : o.overrides)
            r.config[k] = v;
        r.peakAllocated = tl.peakAllocated;
        if (tl.peakReserved > 0)
            r.peakReserved = tl.peakReserved;
        const CapacityEstimate cap = estimateCapacity(trace, di, o.capacity);
        if (cap.bytes > 0)
            r.capacity = cap.bytes;
        const DeviceAnalysis a = analyzeDevice(trace, di);
        addIterations(r, a, d);
        addProjection(r, tracePtr, di, a);
        for (int c = 0; c < kTensorCategoryCount; ++c)
            if (a.atPeak.byCategory[size_t(c)] > 0)
                r.categoriesAtPeak[categoryLowerName(TensorCategory(c))] = a.atPeak.byCategory[size_t(c)];
        r.maxStepTokens = maxStepTokens(r.config);
        r.worstCaseTokens = integerValue(r.config, "worst_case_tokens");
        r.recordedAt = now;
        r.toolVersion = HEADROOM_VERSION;
        runs.push_back(std::move(r));
    }
    return runs;
}

} // namespace headroom
