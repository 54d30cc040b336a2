// SPDX-License-Identifier: MIT
#include "app/clibudget.h"
#include "app/clitext.h"

#include "core/budget/budgetrecorder.h"
#include "core/budget/budgetschema.h"
#include "core/budget/openbudgetstore.h"
#include "core/util/sha256.h"
#include "core/util/units.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace headroom::cli {

namespace {

template <typename T>
nlohmann::json orNull(const std::optional<T>& v)
{
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

BudgetConfig pairsOption(const std::vector<std::string>& pairs)
{
    try {
        return parseBudgetPairs(pairs);
    } catch (const std::invalid_argument& e) {
        throw CommandError(std::string("--config: ") + e.what());
    }
}

std::unique_ptr<BudgetStore> openStore(const std::string& db)
{
    try {
        return openBudgetStore(db);
    } catch (const BudgetStoreError& e) {
        throw CommandError(e.what());
    }
}

nlohmann::json runJson(const BudgetRun& r, const RunVerdict& v)
{
    return {{"run_id", r.runId},
            {"file", r.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.file)},
            {"device", r.device},
            {"source", r.source},
            {"recorded_at", r.recordedAt},
            {"peak_allocated_bytes", r.peakAllocated},
            {"peak_reserved_bytes", orNull(r.peakReserved)},
            {"capacity_bytes", orNull(r.capacity)},
            {"oom", r.oom},
            {"oom_iteration", orNull(r.oomIteration)},
            {"worst_iteration", orNull(r.worstIteration)},
            {"max_step_tokens", orNull(r.maxStepTokens)},
            {"projected_peak_bytes", r.projected ? nlohmann::json(r.projected->peak) : nlohmann::json(nullptr)},
            {"projected_peak_high_bytes", r.projected ? nlohmann::json(r.projected->peakHigh) : nlohmann::json(nullptr)},
            {"margin_left", orNull(v.marginLeft)},
            {"judged_limit_bytes", orNull(v.judgedLimit)},
            {"judged_by", v.marginLeft ? nlohmann::json(v.byProjection ? "projection" : "allocated_peak")
                                       : nlohmann::json(nullptr)},
            {"shortfall", runShortfallKey(v.shortfall)},
            {"categories_at_peak", r.categoriesAtPeak},
            {"config", r.config},
            {"tool_version", r.toolVersion}};
}

nlohmann::json statusJson(const ConfigStatus& s)
{
    nlohmann::json runs = nlohmann::json::array();
    for (size_t i = 0; i < s.runs.size(); ++i)
        runs.push_back(runJson(s.runs[i], s.verdicts[i]));
    const RunShortfall closest = s.validatedBy ? RunShortfall::None : s.verdicts[s.closestRun.value_or(0)].shortfall;
    return {{"key", s.key},
            {"fields", s.fields},
            {"validated", s.validated()},
            {"status", describeStatus(s)},
            {"shortfall", runShortfallKey(closest)},
            {"validated_by", s.validatedBy ? nlohmann::json(s.runs[*s.validatedBy].runId) : nlohmann::json(nullptr)},
            {"validated_peak_bytes", orNull(s.validatedPeak)},
            {"worst_peak_bytes", s.worstPeak},
            {"worst_device_peak_bytes", s.worstDevicePeak},
            {"capacity_bytes", orNull(s.capacity)},
            {"room_left_bytes", orNull(s.roomLeft())},
            {"trend", orNull(s.trend)},
            {"worst_case_tokens", orNull(s.worstCaseTokens)},
            {"largest_step_tokens", orNull(s.largestStepTokens)},
            {"runs", std::move(runs)}};
}

std::string statusText(const ConfigStatus& s)
{
    std::string t = s.key + "\n  " + describeStatus(s) + "\n";
    t += "  " + std::to_string(s.runs.size()) + (s.runs.size() == 1 ? " run" : " runs") + ", worst peak " +
         formatBytes(s.worstPeak);
    if (s.worstDevicePeak != s.worstPeak)
        t += " allocated, " + formatBytes(s.worstDevicePeak) + " on the device";
    if (s.capacity)
        t += "; capacity " + formatBytes(*s.capacity) + " (room left " + formatBytes(*s.roomLeft()) + ")";
    if (s.trend)
        t += ", trend " + signedPercent(*s.trend) + " oldest to newest";
    t += "\n";
    for (size_t i = 0; i < s.runs.size(); ++i) {
        const BudgetRun& r = s.runs[i];
        t += "    " + r.recordedAt + "  " + (r.file.empty() ? r.runId : r.file) + " device " + std::to_string(r.device) +
             ": peak " + formatBytes(r.peakAllocated) +
             (r.projected ? " (projected " + formatBytes(r.projected->peak) + " on the device)" : "") + (r.oom ? ", OOM" : "") +
             (r.maxStepTokens ? ", largest step " + std::to_string(*r.maxStepTokens) : "") + " [" +
             runShortfallKey(s.verdicts[i].shortfall) + "]\n";
    }
    return t;
}

} // namespace

BudgetPolicy budgetPolicyOf(const std::string& margin, const std::string& keyFields)
{
    BudgetPolicy p;
    if (!margin.empty())
        p.margin = percentOption("--margin", margin, 1.0, "10% (below 100%)");
    if (!keyFields.empty()) {
        p.keyFields.clear();
        size_t from = 0;
        while (from <= keyFields.size()) {
            const size_t comma = std::min(keyFields.find(',', from), keyFields.size());
            if (comma > from)
                p.keyFields.push_back(keyFields.substr(from, comma - from));
            from = comma + 1;
        }
        if (p.keyFields.empty())
            throw CommandError("--key-fields: expected field names separated by commas, e.g. model,micro_batch,seq");
    }
    return p;
}

namespace {

/// `budget record --metric-json`: the recorder's run metric, for a store it cannot write
/// itself (PostgreSQL: the standard library has no client).
CommandOutput recordMetric(const BudgetRecordRequest& req)
{
    if (!req.files.empty() || !req.config.empty() || !req.capacity.empty())
        throw CommandError("--metric-json: the run metric is the whole run; no FILE, --config or --capacity with it");
    std::string text;
    if (req.metricJson == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
        std::ifstream in(req.metricJson, std::ios::binary);
        if (!in)
            throw CommandError(req.metricJson + ": cannot open the run metric");
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string name = req.metricJson == "-" ? "the run metric on standard input" : req.metricJson;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded())
        throw CommandError(name + ": not JSON");
    BudgetRun run;
    try {
        run = budgetRunOfJsonRow(j, name);
    } catch (const BudgetStoreError& e) {
        throw CommandError(e.what());
    }
    if (run.runId.empty() || run.recordedAt.empty())
        throw CommandError(name + ": expected run_id and recorded_at");
    const auto store = openStore(req.db);
    bool added = false;
    try {
        added = store->add(run);
    } catch (const BudgetStoreError& e) {
        throw CommandError(e.what());
    }
    CommandOutput out;
    const std::string key = budgetGroupKey(run, BudgetPolicy{});
    out.json = {{"store", store->name()},
                {"recorded", {{{"file", nullptr}, {"device", run.device}, {"run_id", run.runId}, {"added", added},
                               {"key", key}, {"peak_allocated_bytes", run.peakAllocated}, {"oom", run.oom}}}}};
    out.text = (added ? "recorded run metric " : "already recorded run metric ") + run.runId + ": peak " +
               formatBytes(run.peakAllocated) + (run.oom ? ", OOM" : "") + "\n  " + key + "\n";
    return out;
}

} // namespace

CommandOutput runBudgetRecord(const BudgetRecordRequest& req, const TraceSource& source)
{
    if (!req.metricJson.empty())
        return recordMetric(req);
    if (req.files.empty())
        throw CommandError("budget record: expected FILE..., or --metric-json");
    BudgetRecordOptions o;
    o.overrides = pairsOption(req.config);
    if (!req.capacity.empty()) {
        o.capacity = parseByteSize(req.capacity);
        if (!o.capacity)
            throw CommandError("--capacity: expected a size such as 80GiB, 24GB or 1073741824, got '" + req.capacity + "'");
    }
    const auto store = openStore(req.db);
    CommandOutput out;
    nlohmann::json recorded = nlohmann::json::array();
    const BudgetPolicy policy;
    for (const std::string& file : req.files) {
        const auto trace = source(file);
        try {
            o.fileHash = sha256OfFile(file);
        } catch (const std::exception& e) {
            throw CommandError(e.what());
        }
        o.file = file;
        for (const BudgetRun& r : budgetRunsOf(trace, o)) {
            bool added = false;
            try {
                added = store->add(r);
            } catch (const BudgetStoreError& e) {
                throw CommandError(e.what());
            }
            const std::string key = budgetGroupKey(r, policy);
            recorded.push_back({{"file", file}, {"device", r.device}, {"run_id", r.runId}, {"added", added}, {"key", key},
                                {"peak_allocated_bytes", r.peakAllocated}, {"oom", r.oom}});
            out.text += (added ? "recorded " : "already recorded ") + file + " device " + std::to_string(r.device) +
                        ": peak " + formatBytes(r.peakAllocated) +
             (r.projected ? " (projected " + formatBytes(r.projected->peak) + " on the device)" : "") + (r.oom ? ", OOM" : "") + "\n  " + key + "\n";
        }
    }
    out.json = {{"store", store->name()}, {"recorded", std::move(recorded)}};
    return out;
}

CommandOutput runBudgetStatus(const BudgetStatusRequest& req)
{
    const BudgetPolicy policy = budgetPolicyOf(req.margin, req.keyFields);
    const BudgetConfig only = pairsOption(req.config);
    const auto store = openStore(req.db);
    std::vector<ConfigStatus> all;
    try {
        all = assessBudget(store->runs(), policy, only);
    } catch (const BudgetStoreError& e) {
        throw CommandError(e.what());
    }
    CommandOutput out;
    nlohmann::json configs = nlohmann::json::array();
    size_t runs = 0;
    for (const ConfigStatus& s : all) {
        configs.push_back(statusJson(s));
        runs += s.runs.size();
    }
    out.json = {{"store", store->name()},
                {"key_fields", policy.keyFields},
                {"margin", policy.margin},
                {"configurations", std::move(configs)}};
    out.text = "Budget store " + store->name() + ": " + std::to_string(all.size()) +
               (all.size() == 1 ? " configuration, " : " configurations, ") + std::to_string(runs) +
               (runs == 1 ? " run" : " runs") + "\n";
    for (const ConfigStatus& s : all)
        out.text += "\n" + statusText(s);
    return out;
}

BudgetCheck budgetCheck(const LoadedTrace& trace, size_t di, const std::string& db,
                        const std::vector<std::string>& config, const BudgetPolicy& policy, double maxGrowth)
{
    BudgetConfig c = budgetConfigOf(trace, di);
    for (const auto& [k, v] : pairsOption(config))
        c[k] = v;
    const std::string key = budgetConfigKey(c, policy);
    if (key == kNoConfigurationKey)
        throw CommandError("--budget: " + trace.snapshot.path + " tells none of the fields a configuration is known "
                           "by; name it with --config (e.g. --config model=NAME --config micro_batch=4)");
    const auto store = openStore(db);
    std::vector<BudgetRun> runs;
    try {
        runs = store->runs();
    } catch (const BudgetStoreError& e) {
        throw CommandError(e.what());
    }
    const int64_t peak = trace.timelines[di].peakAllocated;
    const BudgetGate g = gateRun(runs, c, peak, policy, maxGrowth);
    BudgetCheck out;
    out.passed = g.passed;
    out.json = {{"name", "budget"}, {"store", store->name()}, {"key", key}, {"value_bytes", peak}, {"max_growth", maxGrowth}};
    out.json["validated"] = g.status && g.status->validated();
    out.json["validated_peak_bytes"] = g.status ? orNull(g.status->validatedPeak) : nlohmann::json(nullptr);
    if (!g.status) {
        out.line = "configuration " + key + " has no runs in " + store->name() + ", so it is not validated";
        return out;
    }
    out.json["status"] = describeStatus(*g.status);
    if (!g.limit) {
        out.line = "configuration " + key + " is " + describeStatus(*g.status);
        return out;
    }
    out.line = "peak allocated " + formatBytes(peak) + (g.passed ? " within " : " over ") + formatBytes(*g.limit) +
               " (the validated peak " + formatBytes(*g.status->validatedPeak) + " + " +
               signedPercent(maxGrowth).substr(1) + ") of configuration " + key;
    return out;
}

void BudgetCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("budget", "The standing memory budget: record runs with their configuration, and "
                                         "which configurations are validated");
    m_cmd->require_subcommand(1);
    m_record = m_cmd->add_subcommand("record", "Record each file's runs (one per device) in the store");
    m_record->add_option("FILE", m_recordReq.files, "Snapshots or traces of finished or crashed runs");
    m_record->add_option("--metric-json", m_recordReq.metricJson,
                         "A run metric instead of files: the recorder's row as JSON ('-': standard input), as "
                         "headroom_record.log_run_metric sends it for a PostgreSQL store");
    m_record->add_option("--db", m_recordReq.db, "The store: an SQLite file, or a postgresql:// URL")->required();
    m_record->add_option("--config", m_recordReq.config,
                         "KEY=VALUE over what the file tells (repeatable), e.g. model=llama-7b, "
                         "worst_case_tokens=8192, step_tokens=4096")
        ->allow_extra_args(false);
    m_record->add_option("--capacity", m_recordReq.capacity, "The device's capacity, e.g. 80GiB (else the OOM record's)");
    m_record->add_flag("--json", m_json, "Machine-readable JSON output");
    m_status = m_cmd->add_subcommand("status", "Each configuration's runs, worst peak, trend, room left, and whether "
                                               "it is validated");
    m_status->add_option("--db", m_statusReq.db, "The store: an SQLite file, or a postgresql:// URL")->required();
    m_status->add_option("--config", m_statusReq.config, "KEY=VALUE: only configurations with it (repeatable)")
        ->allow_extra_args(false);
    m_status->add_option("--margin", m_statusReq.margin, "Share of the capacity a validating run leaves free (default 10%)");
    m_status->add_option("--key-fields", m_statusReq.keyFields,
                         "The fields that make a configuration, comma-separated (default "
                         "model,micro_batch,seq,precision,optimizer,checkpointing,devices,zero,allocator)");
    m_status->add_flag("--json", m_json, "Machine-readable JSON output");
}

int BudgetCommand::run()
{
    if (m_record->parsed())
        return runAndEmit([&] { return runBudgetRecord(m_recordReq, directSource()); }, m_json);
    return runAndEmit([&] { return runBudgetStatus(m_statusReq); }, m_json);
}

} // namespace headroom::cli
