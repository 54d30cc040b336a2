// SPDX-License-Identifier: MIT
#include "app/clicheck.h"

#include "app/clibudget.h"
#include "app/clitext.h"

#include "core/analysis/livegroups.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/snapshotcompare.h"
#include "core/report/analysisreport.h"
#include "core/util/units.h"
#include "core/report/capacityverdict.h"
#include "core/whatif/query/fitjudgement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace headroom::cli {

namespace {

using Unusable = CommandError;


std::string percent(double fraction)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
    return buf;
}

int64_t sizeOption(const std::string& flag, const std::string& text)
{
    const auto v = parseByteSize(text);
    if (!v)
        throw Unusable(flag + ": expected a size such as 70GiB, 24GB or 1073741824, got '" + text + "'");
    return *v;
}

/// `what` names the argument ("--baseline") when the path alone would not say which it is.
void requireFile(const std::string& path, const char* what)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw Unusable((*what ? std::string(what) + " " : std::string()) + path +
                       ": no such file; expected a PyTorch memory snapshot (.pickle), a trace or a .hrt file");
}

std::shared_ptr<const LoadedTrace> loadInput(const TraceSource& source, const std::string& path, const char* what)
{
    requireFile(path, what);
    return source(path);
}

std::string peakPhase(const DeviceAnalysis& a, const MemoryTimeline& tl)
{
    if (tl.peakEventIndex < 0)
        return peakWhere(-1, !tl.allocated.empty());
    const PhaseSpan* s = a.phases.spanOf(tl.peakEventIndex);
    return s ? std::string(phaseKey(s->phase)) : "unknown";
}

/// (name, delta) pairs that grew, largest first.
template <size_t N, typename NameFn>
std::vector<std::pair<std::string, int64_t>> grown(const std::array<int64_t, N>& before,
                                                   const std::array<int64_t, N>& after, NameFn name)
{
    std::vector<std::pair<std::string, int64_t>> out;
    for (size_t i = 0; i < N; ++i)
        if (after[i] > before[i])
            out.emplace_back(name(i), after[i] - before[i]);
    std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.second > y.second; });
    return out;
}

template <size_t N, typename NameFn>
nlohmann::json deltas(const std::array<int64_t, N>& before, const std::array<int64_t, N>& after, NameFn name)
{
    nlohmann::json m = nlohmann::json::object();
    for (size_t i = 0; i < N; ++i)
        m[name(i)] = {{"baseline_bytes", before[i]}, {"bytes", after[i]}, {"delta_bytes", after[i] - before[i]}};
    return m;
}

/// "activation +300.00 MiB, gradient +12.00 MiB" (the two largest).
std::string listGrowth(const std::vector<std::pair<std::string, int64_t>>& g)
{
    std::string s;
    for (size_t i = 0; i < g.size() && i < 2; ++i)
        s += (s.empty() ? "" : ", ") + g[i].first + " " + signedBytes(g[i].second);
    return s.empty() ? "none" : s;
}

/// One --max-category limit: the rule's index and the size.
struct CategoryLimit {
    size_t rule = 0;
    int64_t bytes = 0;
};

/// The --categories file and its --max-category limits, read before any load.
std::vector<CategoryLimit> categoryLimits(const CheckRequest& req, std::optional<UserCategories>& rules)
{
    if (req.categories.empty() != req.maxCategory.empty())
        throw Unusable(req.categories.empty() ? "--max-category: only with --categories RULES.json"
                                              : "--categories: expected --max-category NAME=SIZE too");
    if (req.categories.empty())
        return {};
    try {
        rules = UserCategories::load(req.categories);
    } catch (const UserCategoriesError& e) {
        throw Unusable(std::string("--categories: ") + e.what());
    }
    std::vector<CategoryLimit> out;
    for (const std::string& spec : req.maxCategory) {
        const size_t eq = spec.rfind('=');
        if (eq == std::string::npos || eq == 0)
            throw Unusable("--max-category: expected NAME=SIZE, e.g. attention=8GiB, got '" + spec + "'");
        const std::string name = spec.substr(0, eq);
        const auto& rs = rules->rules();
        const auto it = std::find_if(rs.begin(), rs.end(), [&](const UserCategoryRule& r) { return r.name == name; });
        if (it == rs.end())
            throw Unusable("--max-category: no rule named '" + name + "' in " + req.categories);
        out.push_back({size_t(it - rs.begin()), sizeOption("--max-category", spec.substr(eq + 1))});
    }
    return out;
}

/// check --fit's line: the verdict core gave and the figures it judged, worded for a terminal.
std::string fitLine(const FitJudgement& j, const std::string& where)
{
    const std::string device = formatBytes(j.capacity) + " with " + percent(j.margin) + " free";
    if (!j.projected)
        return "peak allocated " + formatBytes(j.peakAllocated) + " (" + where + ")" +
               (j.passed() ? " fits " + device + " (limit " + formatBytes(j.limit) + ")"
                           : std::string(j.verdict == Verdict::Tight ? " is tight on " : " does not fit ") + device +
                                 " (limit " + formatBytes(j.limit) + ", over it by " +
                                 formatBytes(j.peakAllocated - j.limit) + ")") +
               "; judged by the allocated peak, as the what-if cannot project this file (" + j.notProjectedBecause + ")";
    const std::string counted = j.outsideLeftOut ? "the allocator's caching (the OOM record's capacity leaves the CUDA "
                                                   "context out)"
                                                 : "the CUDA context and the allocator's caching";
    const std::string projected = "peak " + formatBytes(int64_t(j.peak)) + " as recorded, projected with " + counted + " (" + formatBytes(int64_t(j.peakLow)) + " to " +
                                  formatBytes(int64_t(j.peakHigh)) + "; allocated " + formatBytes(j.peakAllocated) +
                                  ", " + where + ")";
    switch (j.verdict) {
    case Verdict::Fits: return projected + " fits " + device;
    case Verdict::Tight: return projected + " is tight on " + device + ": its high end leaves less free";
    case Verdict::DoesNotFit:
        return projected + " does not fit " + formatBytes(j.capacity) +
               (j.peak > double(j.capacity) ? ", over by " + formatBytes(int64_t(j.peak) - j.capacity) : std::string());
    case Verdict::Unknown: break;
    }
    return projected + ": no verdict";
}

} // namespace

void CheckCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("check", "A memory gate for CI: exit 1 when the peak is over a limit, does not fit a "
                                        "device or grew over a baseline");
    m_cmd->add_option("FILE", m_req.file, "Snapshot or trace to check")->required();
    m_cmd->add_option("--max-peak", m_req.maxPeak, "Fail when the peak allocated exceeds this size, e.g. 70GiB");
    m_cmd->add_option("--fit", m_req.fit,
                      "Fail unless the run fits a device of this capacity, e.g. 80GiB, keeping --margin of it "
                      "free: the what-if's verdict on the run as recorded (the CUDA context and the "
                      "allocator's caching counted)");
    m_cmd->add_option("--margin", m_req.margin, "Share of the --fit capacity to keep free (default 10%)");
    m_cmd->add_option("--baseline", m_req.baseline, "An earlier snapshot of the same job to compare with");
    m_cmd->add_option("--max-growth", m_req.maxGrowth,
                      "Fail when the peak allocated grew more than this over "
                      "--baseline, or over the validated peak of --budget (default 0%), e.g. 5%");
    m_cmd->add_option("--budget", m_req.budget,
                      "A budget store (SQLite file or postgresql:// URL): fail unless this run's configuration "
                      "is validated there");
    m_cmd->add_option("--config", m_req.config, "KEY=VALUE over the file's configuration, for --budget (repeatable)")
        ->allow_extra_args(false);
    m_cmd->add_option("--device", m_req.device, "Device ordinal (default: the device with an OOM, else the highest peak, as every view)");
    m_cmd->add_option("--categories", m_req.categories, "Your own categories (a JSON rules file, as analyze takes)");
    m_cmd->add_option("--max-category", m_req.maxCategory,
                      "NAME=SIZE: fail when that rule of --categories claims more at the peak (repeatable)");
    m_cmd->add_flag("--json", m_json, "Machine-readable JSON output");
}

CommandOutput runCheck(const CheckRequest& req, const TraceSource& source)
{
    {
        if (!req.margin.empty() && req.fit.empty())
            throw Unusable("--margin: only with --fit SIZE");
        if (!req.maxGrowth.empty() && req.baseline.empty() && req.budget.empty())
            throw Unusable("--max-growth: only with --baseline OLD or --budget DB");
        if (!req.baseline.empty() && req.maxGrowth.empty())
            throw Unusable("--baseline: expected --max-growth PCT too, e.g. --max-growth 5%");
        if (!req.config.empty() && req.budget.empty())
            throw Unusable("--config: only with --budget DB");
        std::optional<UserCategories> rules;
        const std::vector<CategoryLimit> limits = categoryLimits(req, rules);
        if (req.maxPeak.empty() && req.fit.empty() && req.baseline.empty() && limits.empty() && req.budget.empty())
            throw Unusable("check: nothing to check; expected --max-peak SIZE, --fit SIZE, --baseline OLD "
                           "--max-growth PCT, --budget DB or --categories RULES.json --max-category NAME=SIZE");
        // Every argument is checked before the (possibly slow) loads.
        // 0: not asked for (parseByteSize never returns 0; plain integers keep GCC's
        // -Wmaybe-uninitialized quiet, which misfires on optionals here).
        const int64_t maxPeak = req.maxPeak.empty() ? 0 : sizeOption("--max-peak", req.maxPeak);
        const int64_t fit = req.fit.empty() ? 0 : sizeOption("--fit", req.fit);
        const double margin =
            req.margin.empty() ? kDefaultFitMargin : percentOption("--margin", req.margin, 1.0, "10% (below 100%)");
        const double maxGrowth = req.maxGrowth.empty() ? 0.0 : percentOption("--max-growth", req.maxGrowth, 1e6, "5%");

        if (!req.baseline.empty())
            requireFile(req.baseline, "--baseline"); // before the first load, which may take a while
        const auto trace = loadInput(source, req.file, "");
        const size_t di = pickDevice(*trace, req.device, req.file);
        const MemoryTimeline& tl = trace->timelines[di];
        const DeviceAnalysis a = analyzeDevice(*trace, di);
        const int device = trace->snapshot.devices[di].device;
        const int64_t peak = tl.peakAllocated;
        const std::string where = "device " + std::to_string(device) +
                                  (tl.peakEventIndex >= 0 ? ", event " + std::to_string(tl.peakEventIndex) : "") +
                                  ", " + peakPhase(a, tl);

        nlohmann::json checks = nlohmann::json::array();
        std::vector<std::string> lines;
        bool passed = true;
        auto report = [&](nlohmann::json c, bool ok, const std::string& line) {
            passed = passed && ok;
            c["passed"] = ok;
            c["message"] = line;
            lines.push_back(std::string(ok ? "PASS " : "FAIL ") + c["name"].get<std::string>() + ": " + line);
            checks.push_back(std::move(c));
        };

        if (maxPeak > 0) {
            const bool ok = peak <= maxPeak;
            report({{"name", "max-peak"}, {"value_bytes", peak}, {"limit_bytes", maxPeak}}, ok,
                   "peak allocated " + formatBytes(peak) + " (" + where + ")" +
                       (ok ? " <= " + formatBytes(maxPeak)
                           : " exceeds " + formatBytes(maxPeak) + " by " + formatBytes(peak - maxPeak)));
        }
        if (fit > 0) {
            const FitJudgement j = judgeFit(trace, di, a, fit, margin);
            nlohmann::json c = fitJudgementJson(j);
            c["name"] = "fit";
            c["value_bytes"] = peak;
            report(std::move(c), j.passed(), fitLine(j, where));
        }
        if (!limits.empty()) {
            const UserCategoryTotals g = userCategoriesAt(*trace, di, a, tl.peakEventIndex, *rules);
            for (const CategoryLimit& l : limits) {
                const UserCategoryGroup& u = g.groups[l.rule];
                const bool ok = u.bytes <= l.bytes;
                report({{"name", "max-category"}, {"category", u.name}, {"value_bytes", u.bytes}, {"limit_bytes", l.bytes}},
                       ok,
                       "'" + u.name + "' holds " + formatBytes(u.bytes) + " at the peak (" + where + ")" +
                           (ok ? " <= " + formatBytes(l.bytes)
                               : " exceeds " + formatBytes(l.bytes) + " by " + formatBytes(u.bytes - l.bytes)));
            }
        }
        if (!req.baseline.empty()) {
            const auto base = loadInput(source, req.baseline, "--baseline");
            const bool same = std::any_of(base->snapshot.devices.begin(), base->snapshot.devices.end(),
                                          [&](const DeviceData& d) { return d.device == device; });
            const size_t bi = pickDevice(*base, same ? std::optional(device) : std::nullopt, req.baseline);
            const DeviceAnalysis ba = analyzeDevice(*base, bi);
            // Comparison is the GUI's compare view: peaks, categories and the allocations
            // (by innermost frame and size) alive at one peak and not the other.
            const Comparison cmp = Comparison::compute({base.get(), bi, &ba}, {trace.get(), di, &a}, 20);
            const int64_t before = cmp.peakA;
            const double growth = before > 0 ? double(peak - before) / double(before) : (peak > 0 ? INFINITY : 0.0);
            const bool ok = growth <= maxGrowth;
            const auto cats = grown(cmp.categoriesA, cmp.categoriesB, categoryKeyAt);
            const auto phases = grown(ba.atPeak.byPhase, a.atPeak.byPhase, phaseKeyAt);
            nlohmann::json sigs = nlohmann::json::array();
            // The line names the largest growth at a Python frame (the user's code) when
            // there is one: C++-only stacks (autograd's thread) end in allocator frames.
            std::string largestNew, largestNewPython;
            for (const SignatureDiff& d : cmp.differences) {
                if (d.countB <= d.countA)
                    continue;
                const std::string text = std::to_string(d.countB - d.countA) + " x " + formatBytes(d.size) + " at " +
                                         (d.frame.empty() ? "(no stack)" : d.frame);
                if (largestNew.empty())
                    largestNew = text;
                if (largestNewPython.empty() && d.frame.find(".py:") != std::string::npos)
                    largestNewPython = text;
                sigs.push_back({{"frame", d.frame},
                                {"size", d.size},
                                {"baseline_count", d.countA},
                                {"count", d.countB},
                                {"delta_bytes", d.bytesDelta()}});
            }
            const std::string growthText = std::isinf(growth) ? "from 0 B" : percent(growth);
            std::string line = "peak allocated " + formatBytes(peak) + " vs baseline " + formatBytes(before) + " (" +
                               (growth >= 0 && !std::isinf(growth) ? "+" : "") + growthText + ", limit " +
                               percent(maxGrowth) + ")";
            if (!ok) {
                line = "peak allocated grew " + growthText + " over the baseline (" + formatBytes(before) + " -> " +
                       formatBytes(peak) + ", limit " + percent(maxGrowth) +
                       "); grew by category: " + listGrowth(cats) + "; by phase: " + listGrowth(phases);
                if (!largestNewPython.empty())
                    line += "; largest new in Python code: " + largestNewPython;
                else if (!largestNew.empty())
                    line += "; largest new: " + largestNew;
            }
            report({{"name", "growth"},
                    {"baseline_file", base->snapshot.path},
                    {"baseline_device", base->snapshot.devices[bi].device},
                    {"baseline_bytes", before},
                    {"value_bytes", peak},
                    {"growth", std::isinf(growth) ? nlohmann::json(nullptr) : nlohmann::json(growth)},
                    {"max_growth", maxGrowth},
                    {"baseline_peak_phase", peakPhase(ba, base->timelines[bi])},
                    {"by_category", deltas(cmp.categoriesA, cmp.categoriesB, categoryKeyAt)},
                    {"by_phase", deltas(ba.atPeak.byPhase, a.atPeak.byPhase, phaseKeyAt)},
                    {"grown_allocations", std::move(sigs)}},
                   ok, line);
        }

        if (!req.budget.empty()) {
            const BudgetCheck b = budgetCheck(*trace, di, req.budget, req.config, BudgetPolicy{}, maxGrowth);
            report(b.json, b.passed, b.line);
        }

        CommandOutput out;
        {
            out.json = {{"file", trace->snapshot.path},
                        {"device", device},
                        {"passed", passed},
                        {"peak_allocated_bytes", peak},
                        {"peak_reserved_bytes", tl.peakReserved},
                        {"peak_event_index", tl.peakEventIndex},
                        {"peak_phase", peakPhase(a, tl)},
                        {"checks", std::move(checks)}};
        }
        for (const std::string& l : lines)
            out.text += l + "\n";
        out.exitCode = passed ? 0 : 1;
        return out;
    }
}

int CheckCommand::run()
{
    return runAndEmit([&] { return runCheck(m_req, directSource()); }, m_json);
}

} // namespace headroom::cli
