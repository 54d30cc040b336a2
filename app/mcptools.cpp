// SPDX-License-Identifier: MIT
#include "app/mcptools.h"

#include "app/clibudget.h"
#include "app/clicheck.h"
#include "app/clicompare.h"
#include "app/clidoctor.h"
#include "app/clijson.h"
#include "app/clireplay.h"
#include "app/cliwhatif.h"
#include "app/toolargs.h"
#include "core/analysis/livegroups.h"
#include "core/analysis/moduleforward.h"
#include "core/analysis/summary.h"
#include "core/report/analysisreport.h"
#include "core/util/units.h"

namespace headroom::cli {

namespace {

using nlohmann::json;

const json kFile = schema::text("Absolute path of a PyTorch memory snapshot (.pickle[.gz]), profiler timeline, "
                                "Chrome/Kineto trace or Headroom .hrt");
const json kDevice = schema::integer("Device ordinal (default: every device, or the one with an OOM, else the highest peak)", 0);
const json kCapacity = schema::text("Device capacity, e.g. 80GiB, 24GB or a byte count (default: the OOM record's)");

/// A result schema: an object with schema_version and these typed keys, others allowed.
json result(json properties, std::vector<std::string> required)
{
    properties["schema_version"] = {{"type", "integer"}, {"const", kJsonSchemaVersion}};
    required.push_back("schema_version");
    return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

const json kInt = {{"type", "integer"}};
const json kStr = {{"type", "string"}};
const json kArr = {{"type", "array"}};
const json kObj = {{"type", "object"}};

ToolArgs argsFor(const json& arguments, const std::string& tool)
{
    return ToolArgs(arguments, findMcpTool(tool)->inputSchema, tool);
}

int64_t capacityArg(const ToolArgs& a)
{
    if (!a.has("capacity"))
        return 0;
    const auto c = parseByteSize(a.text("capacity"));
    if (!c || *c <= 0)
        throw CommandError("argument 'capacity': expected a size such as 80GiB, 24GB or 1073741824, got '" +
                           a.text("capacity") + "'");
    return *c;
}

/// The positions of the devices a call looks at: the one with `device`'s ordinal, else all.
std::vector<size_t> devicesOf(const LoadedTrace& t, const ToolArgs& a)
{
    if (a.has("device"))
        return {pickDevice(t, a.integer("device"), t.snapshot.path)};
    std::vector<size_t> all(t.snapshot.devices.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    return all;
}

CommandOutput openTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "open");
    const auto trace = cache.load(a.text("file"));
    json devices = json::array();
    std::string text = trace->snapshot.path + " (" + trace->snapshot.format + ")\n";
    for (size_t i = 0; i < trace->snapshot.devices.size(); ++i) {
        const DeviceData& d = trace->snapshot.devices[i];
        const MemoryTimeline& tl = trace->timelines[i];
        devices.push_back({{"device", d.device},
                           {"device_type", d.deviceType},
                           {"events", d.trace.count()},
                           {"allocations", tl.allocations.size()},
                           {"peak_allocated_bytes", tl.peakAllocated},
                           {"peak_reserved_bytes", tl.peakReserved},
                           {"reserved_recorded", tl.reservedRecorded},
                           {"peak_event_index", tl.peakEventIndex},
                           {"ooms", d.ooms.size()}});
        text += "device " + std::to_string(d.device) + ": peak " + formatBytes(tl.peakAllocated) + " allocated, " +
                (tl.reservedRecorded ? formatBytes(tl.peakReserved) + " reserved, " : "reserved not recorded, ") + std::to_string(d.ooms.size()) + " OOM(s), " +
                std::to_string(d.trace.count()) + " events\n";
    }
    const CommandOutput doctor = doctorOutput(*trace);
    CommandOutput out;
    out.json = {{"file", trace->snapshot.path},
                {"format", trace->snapshot.format},
                {"devices", std::move(devices)},
                {"doctor", {{"warnings", doctor.json["warnings"]}, {"findings", doctor.json["findings"]}}}};
    out.text = text + doctor.text;
    return out;
}

CommandOutput summaryTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "summary");
    const auto trace = cache.load(a.text("file"));
    return {summaryJson(*trace), summaryText(*trace), 0};
}

CommandOutput diagnoseTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "diagnose");
    const std::string file = a.text("file");
    const auto trace = cache.load(file);
    const int64_t capacity = capacityArg(a);
    json devices = json::array();
    std::string text;
    for (size_t i : devicesOf(*trace, a)) {
        const auto report = cache.report(file, i, capacity);
        json findings = json::array();
        text += "device " + std::to_string(trace->snapshot.devices[i].device) + ":\n";
        for (const Finding& f : report->findings) {
            findings.push_back(
                {{"kind", f.kind}, {"verdict", f.verdict}, {"evidence", f.evidence}, {"first_move", f.firstMove}});
            text += "- [" + f.kind + "] " + f.verdict + "\n    evidence: " + f.evidence +
                    "\n    first move: " + f.firstMove + "\n";
        }
        devices.push_back({{"device", trace->snapshot.devices[i].device},
                           {"capacity", {{"bytes", report->capacity.bytes}, {"source", report->capacity.source}}},
                           {"findings", std::move(findings)},
                           {"failing_requests", oomRecordsJson(trace->snapshot, trace->snapshot.devices[i])}});
    }
    return {{{"file", trace->snapshot.path}, {"devices", std::move(devices)}}, text, 0};
}

CommandOutput peakTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "peak");
    const std::string file = a.text("file");
    const auto trace = cache.load(file);
    const size_t index = pickDevice(*trace, a.integer("device"), trace->snapshot.path);
    const MemoryTimeline& tl = trace->timelines[index];
    const int64_t event = a.has("event") ? int64_t(*a.integer("event")) : tl.peakEventIndex;
    const int64_t events = int64_t(trace->snapshot.devices[index].trace.count());
    if (event < -1 || event >= std::max<int64_t>(events, 0))
        throw CommandError("peak: argument 'event': expected -1 .. " + std::to_string(events - 1) + ", got " +
                           std::to_string(event));
    const DeviceAnalysis& analysis = *cache.analysis(file, index);
    const LiveGroups g = LiveGroups::at(*trace, index, analysis, event, size_t(a.integer("top").value_or(10)));
    json j = liveGroupsJson(g, moduleForwardWindows(*trace, index, analysis, event));
    j["file"] = trace->snapshot.path;
    j["device"] = trace->snapshot.devices[index].device;
    j["at_peak"] = event == tl.peakEventIndex;
    // The rows read as analyze's: "allocated by" is the user's code there too.
    const std::string text = formatBytes(g.bytes) + " alive after event " + std::to_string(event) + " on device " +
                             std::to_string(trace->snapshot.devices[index].device) +
                             ", by the code that allocated it:\n" + liveGroupRowsText(j);
    return {std::move(j), text, 0};
}

WhatIfRequest whatIfRequest(const ToolArgs& a)
{
    WhatIfRequest r;
    if (a.has("file"))
        r.files.push_back(a.text("file"));
    for (const std::string& f : a.texts("files"))
        r.files.push_back(f);
    r.microBatch = a.integer("micro_batch");
    r.accum = a.integer("accum");
    r.seq = a.integer("seq");
    r.zero = a.integer("zero");
    r.devices = a.integer("devices");
    r.checkpoint = a.text("checkpoint");
    r.precision = a.text("precision");
    r.optimizer = a.text("optimizer");
    r.offload = a.text("offload");
    r.flashAttn = a.onOff("flash_attn");
    r.expandable = a.onOff("expandable_segments");
    r.loraFraction = a.number("lora_fraction");
    r.capacity = a.text("capacity");
    r.margin = a.text("margin");
    r.devicePreset = a.text("device_preset");
    r.measuredMicroBatch = a.integers("measured_micro_batch");
    r.measuredSeq = a.integers("measured_seq");
    r.measuredDevices = a.integer("measured_devices");
    r.measuredAccum = a.integer("measured_accum");
    r.measuredPrecision = a.text("measured_precision");
    r.model = a.text("model");
    r.deviceIndex = a.integer("device_index");
    r.currencyOrder = a.text("currency_order");
    r.availableDevices = a.integer("available_devices").value_or(1);
    return r;
}

Calibrator cachedCalibrator(TraceCache& cache)
{
    return [&cache](const std::string& path, size_t index, const StatedConfig& stated, const ModelDims& dims) {
        return *cache.calibration(path, index, stated, dims);
    };
}

CommandOutput whatIfTool(const json& arguments, TraceCache& cache)
{
    return runWhatIf(whatIfRequest(argsFor(arguments, "whatif")), false, cache.source(), cachedCalibrator(cache));
}

CommandOutput ladderTool(const json& arguments, TraceCache& cache)
{
    return runWhatIf(whatIfRequest(argsFor(arguments, "ladder")), true, cache.source(), cachedCalibrator(cache));
}

CommandOutput replayTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "replay");
    ReplayRequest r;
    r.file = a.text("file");
    if (a.has("alloc_conf"))
        r.allocConf = a.text("alloc_conf");
    r.capacity = a.text("capacity");
    r.device = a.integer("device").value_or(-1);
    return runReplay(r, cache.source());
}

CommandOutput compareTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "compare");
    return runCompare({a.text("file_a"), a.text("file_b"), a.integer("device"), a.text("max_growth"), std::string()},
                      cache.source());
}

CommandOutput doctorTool(const json& arguments, TraceCache& cache)
{
    return doctorOutput(*cache.load(argsFor(arguments, "doctor").text("file")));
}

CommandOutput checkTool(const json& arguments, TraceCache& cache)
{
    const ToolArgs a = argsFor(arguments, "check");
    CheckRequest r;
    r.file = a.text("file");
    r.maxPeak = a.text("max_peak");
    r.fit = a.text("fit");
    r.margin = a.text("margin");
    r.baseline = a.text("baseline");
    r.maxGrowth = a.text("max_growth");
    r.device = a.integer("device");
    r.budget = a.text("budget");
    r.config = a.texts("config");
    return runCheck(r, cache.source());
}

CommandOutput budgetStatusTool(const json& arguments, TraceCache&)
{
    const ToolArgs a = argsFor(arguments, "budget_status");
    return runBudgetStatus({a.text("db"), a.texts("config"), a.text("margin"), a.text("key_fields")});
}

json whatIfInput(bool ladder)
{
    json p = {
        {"file", kFile},
        {"files", schema::texts("More runs of the same job at other micro-batches or sequence lengths (they fit the "
                                "batch and quadratic terms)")},
        {"micro_batch", schema::integer("Target micro-batch per device", 1)},
        {"accum", schema::integer("Target gradient-accumulation steps", 1)},
        {"seq", schema::integer("Target sequence length", 1)},
        {"checkpoint", schema::text("none, selective, full or every:K")},
        {"precision", schema::text("fp32, amp-bf16, amp-fp16 or bf16")},
        {"optimizer", schema::text("adamw, adamw-fused, adam8bit, adafactor, sgd or sgd-momentum")},
        {"zero", schema::integer("ZeRO stage 0..3 (FSDP FULL_SHARD = 3)", 0)},
        {"devices", schema::integer("Data-parallel / sharding degree", 1)},
        {"offload", schema::text("none, optimizer or params")},
        {"flash_attn", schema::flag("FlashAttention / memory-efficient attention")},
        {"expandable_segments", schema::flag("PYTORCH_CUDA_ALLOC_CONF expandable_segments")},
        {"lora_fraction", schema::number("Trainable fraction of the parameters (LoRA / freezing; 1 = full)")},
        {"capacity", kCapacity},
        {"margin", schema::text("Share of the capacity a fit keeps free (default 10%, as check's fit and the budget "
                                "keep)")},
        {"device_preset", schema::text("Device speeds: 24gib, 40gib, 48gib, 80gib, a100-80gb, 94gib, 141gib")},
        {"measured_micro_batch", schema::integers("Micro-batch the file(s) were measured at, one per file")},
        {"measured_seq", schema::integers("Sequence length the file(s) were measured at, one per file")},
        {"measured_devices", schema::integer("Devices the measured run used", 1)},
        {"measured_accum", schema::integer("Accumulation steps of the measured run", 1)},
        {"measured_precision", schema::text("Precision the file was measured at")},
        {"model", schema::text("Analytic preset without a file: gpt2, llama2-7b, llama3-8b, llama2-70b")},
        {"device_index", schema::integer("Which device of a multi-device file (position; default: the device with "
                                         "an OOM, else the highest peak)",
                                         0)}};
    if (ladder) {
        p["currency_order"] = schema::text("Spend these first, e.g. hardware,throughput,engineering,fidelity");
        p["available_devices"] = schema::integer("Devices available for sharding rungs", 1);
    }
    return schema::object(std::move(p), {});
}

std::vector<McpTool> buildTools()
{
    using schema::object;
    using schema::text;
    std::vector<McpTool> t;
    t.push_back(
        {"open",
         "Load a memory snapshot or trace (kept loaded for later calls): its devices, peaks, OOMs and "
         "what the capture cannot show (the capture doctor)",
         object({{"file", kFile}}, {"file"}),
         result({{"file", kStr}, {"format", kStr}, {"devices", kArr}, {"doctor", kObj}}, {"file", "devices", "doctor"}),
         openTool});
    t.push_back({"summary", "Per-device totals, the replayed peak and the OOM records (headroom-cli summary --json)",
                 object({{"file", kFile}}, {"file"}), result({{"file", kStr}, {"devices", kArr}}, {"devices"}),
                 summaryTool});
    t.push_back({"diagnose",
                 "Findings with their evidence and first move: capacity, leak, fragmentation, outlier "
                 "batch, imbalance, OOM",
                 object({{"file", kFile}, {"capacity", kCapacity}, {"device", kDevice}}, {"file"}),
                 result({{"file", kStr}, {"devices", kArr}}, {"file", "devices"}), diagnoseTool});
    t.push_back(
        {"peak",
         "What is alive at the peak (or after an event), grouped by the code that allocated it, by "
         "category, phase and module",
         object({{"file", kFile},
                 {"device", kDevice},
                 {"event", schema::integer("Event index (default: the allocated peak; -1: before the first)", -1)},
                 {"top", schema::integer("Rows of by_stack and by_module (default 10)", 1)}},
                {"file"}),
         result({{"file", kStr},
                 {"device", kInt},
                 {"event_index", kInt},
                 {"bytes", kInt},
                 {"by_stack", kArr},
                 {"by_module", kArr},
                 {"by_category", kObj},
                 {"by_phase", kObj}},
                {"file", "event_index", "bytes", "by_stack", "by_category", "by_phase", "by_module"}),
         peakTool});
    t.push_back({"whatif",
                 "Project the peak memory and step time for other levers (micro-batch, sequence, "
                 "checkpointing, precision, optimizer, sharding, offload), calibrated on the file(s)",
                 whatIfInput(false),
                 result({{"peak_bytes", kInt},
                         {"peak_low_bytes", kInt},
                         {"peak_high_bytes", kInt},
                         {"verdict", kStr},
                         {"step_time_s", {{"type", {"number", "null"}}}},
                         {"measured", kObj}},
                        {"peak_bytes", "peak_low_bytes", "peak_high_bytes", "verdict", "measured"}),
                 whatIfTool});
    t.push_back({"ladder", "Walk the levers cheapest currency first until the job fits the capacity", whatIfInput(true),
                 result({{"rungs", kArr}}, {"rungs"}), ladderTool});
    t.push_back({"replay",
                 "Replay the allocations through a simulation of PyTorch's caching allocator: check it "
                 "against the recording, or try another PYTORCH_CUDA_ALLOC_CONF",
                 object({{"file", kFile},
                         {"alloc_conf", text("e.g. expandable_segments:True,max_split_size_mb:512 (default: the "
                                             "recorded setting)")},
                         {"capacity", kCapacity},
                         {"device", kDevice}},
                        {"file"}),
                 result({{"file", kStr}, {"devices", kArr}}, {"file", "devices"}), replayTool});
    t.push_back({"compare",
                 "What grew and what shrank from run A to run B: by category, phase, module, line and "
                 "iteration",
                 object({{"file_a", schema::text("The run before")},
                         {"file_b", schema::text("The run after")},
                         {"device", kDevice},
                         {"max_growth", text("Fail (passed: false) when B's peak grew more than this, e.g. 5%")}},
                        {"file_a", "file_b"}),
                 result({{"peak_delta_bytes", kInt}, {"grew", kArr}, {"shrank", kArr}, {"by_category", kObj}},
                        {"peak_delta_bytes", "grew", "shrank", "by_category"}),
                 compareTool});
    t.push_back({"doctor", "Is this capture good enough? What the file cannot show and how to record one that can",
                 object({{"file", kFile}}, {"file"}),
                 result({{"file", kStr}, {"warnings", kInt}, {"findings", kArr}}, {"file", "findings"}), doctorTool});
    t.push_back({"check", "A memory gate: the peak against a limit, a device, or an earlier run",
                 object({{"file", kFile},
                         {"max_peak", text("Fail when the peak allocated exceeds this, e.g. 70GiB")},
                         {"fit", text("Fail unless the peak fits a device of this capacity, keeping margin free")},
                         {"margin", text("Share of the fit capacity to keep free (default 10%)")},
                         {"baseline", text("An earlier snapshot of the same job")},
                         {"max_growth", text("With baseline: fail when the peak grew more than this, e.g. 5%; "
                                             "with budget: more than the validated peak")},
                         {"budget", text("A budget store (SQLite file or postgresql:// URL): fail unless this run's "
                                         "configuration is validated there")},
                         {"config", schema::texts("KEY=VALUE pairs over the file's configuration, with budget")},
                         {"device", kDevice}},
                        {"file"}),
                 result({{"passed", {{"type", "boolean"}}}, {"checks", kArr}}, {"passed", "checks"}), checkTool});
    t.push_back({"budget_status",
                 "The standing memory budget: each configuration's runs, worst peak, trend, room left, and whether "
                 "a run of it survived its worst-case step (validated) or why not",
                 object({{"db", text("The store: an SQLite file or a postgresql:// URL")},
                         {"config", schema::texts("KEY=VALUE: only configurations with these values")},
                         {"margin", text("Share of the capacity a validating run leaves free (default 10%)")},
                         {"key_fields", text("The fields that make a configuration, comma-separated")}},
                        {"db"}),
                 result({{"store", kStr}, {"configurations", kArr}}, {"store", "configurations"}), budgetStatusTool});
    return t;
}

} // namespace

const std::vector<McpTool>& mcpTools()
{
    static const std::vector<McpTool> tools = buildTools();
    return tools;
}

const McpTool* findMcpTool(const std::string& name)
{
    for (const McpTool& t : mcpTools())
        if (t.name == name)
            return &t;
    return nullptr;
}

} // namespace headroom::cli
