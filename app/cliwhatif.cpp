// SPDX-License-Identifier: MIT
#include "app/cliwhatif.h"

#include "app/clichecks.h"
#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/summary.h"
#include "core/util/join.h"
#include "core/util/units.h"
#include "core/whatif/ladder/allocatorverdict.h"
#include "core/whatif/query/whatifjson.h"
#include "core/whatif/query/whatifsession.h"

#include <charconv>
#include <cstdio>
#include <sstream>

namespace headroom::cli {

namespace {

struct BadInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

} // namespace

void WhatIfCommands::addCommon(CLI::App* cmd, Options& o, bool ladder)
{
    cmd->add_option("FILE", o.files,
                    "Trace to calibrate on (omit with --model or dimension flags: analytic mode); more runs of the "
                    "same job at other micro-batches or sequence lengths fit the batch and quadratic terms");
    cmd->add_option("--micro-batch", o.microBatch, "Target micro-batch per device")->check(positiveWhole());
    cmd->add_option("--accum", o.accum, "Target gradient-accumulation steps")->check(positiveWhole());
    cmd->add_option("--seq", o.seq, "Target sequence length")->check(positiveWhole());
    cmd->add_option("--checkpoint", o.checkpoint, "none|selective|full|every:K");
    cmd->add_option("--precision", o.precision, "fp32|amp-bf16|amp-fp16|bf16");
    cmd->add_option("--optimizer", o.optimizer, "adamw|adamw-fused|adam8bit|adafactor|sgd|sgd-momentum");
    cmd->add_option("--zero", o.zero, "ZeRO stage 0..3 (FSDP FULL_SHARD = 3)")->check(CLI::Range(0, 3));
    cmd->add_option("--devices", o.devices, "Data-parallel / sharding degree N")->check(positiveWhole());
    cmd->add_option("--offload", o.offload, "none|optimizer|params");
    cmd->add_option("--flash-attn", o.flashAttn, "on|off");
    cmd->add_option("--lora-fraction", o.loraFraction,
                    "Trainable fraction of the parameters (LoRA / freezing; 1 = full)")
        ->check(CLI::Range(1e-6, 1.0));
    cmd->add_option("--expandable-segments", o.expandable, "on|off");
    cmd->add_option("--capacity", o.capacity,
                    "Device capacity, e.g. 80GiB, 24GB or a byte count (default: the OOM record's)");
    cmd->add_option("--margin", o.margin,
                    "Share of the capacity a fit keeps free (default 10%, as check --fit and the budget keep)");
    cmd->add_option("--speeds", o.devicePreset,
                    "Device speeds preset: 24gib, 40gib, 48gib, 80gib, a100-80gb, 94gib, 141gib");
    cmd->add_option("--device", o.device,
                    "Device ordinal of a multi-device trace, as in check, compare and state (default: the device "
                    "with an OOM, else the highest peak); a preset name is the old spelling of --speeds");
    cmd->add_flag("--json", o.json, "Machine-readable JSON output");
    cmd->add_option("--measured-micro-batch", o.measuredMicroBatch,
                    "Micro-batch the trace was measured at (with several FILEs: one per file, comma-separated)")
        ->delimiter(',')
        ->allow_extra_args(false) // one comma-separated list: the FILE after it is not a value
        ->check(positiveWhole());
    cmd->add_option("--measured-seq", o.measuredSeq,
                    "Sequence length the trace was measured at (with several FILEs: one per file, comma-separated)")
        ->delimiter(',')
        ->allow_extra_args(false) // one comma-separated list: the FILE after it is not a value
        ->check(positiveWhole());
    cmd->add_option("--measured-precision", o.measuredPrecision, "Precision the trace was measured at");
    cmd->add_option("--measured-devices", o.measuredDevices, "Devices the trace's run used")
        ->check(positiveWhole());
    cmd->add_option("--measured-accum", o.measuredAccum, "Accumulation steps of the measured run")
        ->check(positiveWhole());
    cmd->add_option("--model", o.model, "Analytic preset: gpt2, llama2-7b, llama3-8b, llama2-70b");
    cmd->add_option("--layers", o.layers, "Layers")->check(positiveWhole());
    cmd->add_option("--hidden", o.hidden, "Hidden size")->check(positiveWhole());
    cmd->add_option("--heads", o.heads, "Attention heads")->check(positiveWhole());
    cmd->add_option("--ffn", o.ffn, "MLP inner size")->check(positiveWhole());
    cmd->add_option("--vocab", o.vocab, "Vocabulary")->check(positiveWhole());
    cmd->add_option("--params", o.params, "Parameter count (e.g. 6.7e9)")->check(positiveAmount());
    cmd->add_option("--device-index", o.deviceIndex,
                    "Which device of a multi-device trace (position; default: the device with an OOM, else the "
                    "highest peak, as the GUI opens)");
    if (!ladder)
        cmd->add_option("--verify", o.verify,
                        "The run that followed (AFTER): project FILE to its configuration (the levers given, else "
                        "what AFTER's file tells) and compare with its measured peak, term by term");
    if (ladder) {
        cmd->add_option("--currency-order", o.currencyOrder,
                        "Spend these first, e.g. hardware,throughput,engineering,fidelity");
        cmd->add_option("--available-devices", o.availableDevices, "Devices available for sharding rungs")
            ->check(positiveWhole());
    }
}

void WhatIfCommands::add(CLI::App& app)
{
    m_whatif =
        app.add_subcommand("whatif", "Project peak memory and step time for other levers (calibrated or analytic)");
    addCommon(m_whatif, m_w, false);
    m_ladder = app.add_subcommand("ladder", "Walk the levers cheapest currency first until the job fits");
    addCommon(m_ladder, m_l, true);
}

bool WhatIfCommands::parsed() const
{
    return (m_whatif && m_whatif->parsed()) || (m_ladder && m_ladder->parsed());
}

int WhatIfCommands::run()
{
    const Options& o = m_whatif->parsed() ? m_w : m_l;
    const bool ladder = !m_whatif->parsed();
    return runAndEmit([&] { return runWhatIf(o, ladder, directSource()); }, o.json);
}

namespace {

/// Model dimensions: a preset, overridden by explicit flags.
ModelDims dimsOf(const WhatIfRequest& o)
{
    ModelDims dims;
    if (!o.model.empty()) {
        auto p = modelPreset(o.model);
        if (!p)
            throw BadInput("--model: unknown preset '" + o.model + "' (presets: " + joinWith(modelPresetNames()) + ")");
        dims = *p;
    }
    if (o.layers)
        dims.layers = *o.layers;
    if (o.hidden)
        dims.hidden = *o.hidden;
    if (o.heads)
        dims.heads = *o.heads;
    if (o.ffn)
        dims.ffn = *o.ffn;
    if (o.vocab)
        dims.vocab = *o.vocab;
    if (o.params)
        dims.params = *o.params;
    else if (o.model.empty() && dims.layers && dims.hidden && dims.vocab)
        dims.params = estimateParams(dims.layers, dims.hidden, dims.ffn, dims.vocab);
    if (dims.name.empty())
        dims.name = "custom";
    return dims;
}

/// What the files (or the analytic model) say about the measured run.
struct Measured {
    std::optional<WhatIfSession> session;
    std::vector<MeasuredItem> items;
    int64_t traceCapacity = 0;
    std::string traceCapacitySource;
    std::optional<AllocatorVerdict> allocatorVerdict; ///< for an OOM record, at the capacity
    size_t device = 0;                                ///< position of the device calibrated on
    const WhatIfBaseline& base() const { return session->baseline(); }
    const std::optional<Calibration>& cal() const { return session->calibration(); }
};

StatedConfig statedFor(const WhatIfRequest& o, size_t i)
{
    StatedConfig st;
    if (i < o.measuredMicroBatch.size())
        st.microBatch = o.measuredMicroBatch[i];
    if (i < o.measuredSeq.size())
        st.seq = o.measuredSeq[i];
    return st;
}

/// `--device` as a device ordinal; none when it is absent or names a speed preset.
std::optional<int> deviceOrdinal(const WhatIfRequest& o)
{
    int ordinal = 0;
    const char* end = o.device.data() + o.device.size();
    const auto [at, ec] = std::from_chars(o.device.data(), end, ordinal);
    if (o.device.empty() || ec != std::errc() || at != end) // a preset name, or no number an int holds
        return std::nullopt;
    return ordinal;
}

/// The speed preset: --speeds, else --device in its old meaning (a preset name), with a note.
std::string speedsPreset(const WhatIfRequest& o)
{
    if (!o.devicePreset.empty() || o.device.empty() || deviceOrdinal(o))
        return o.devicePreset;
    std::fprintf(stderr, "headroom-cli: --device %s: a speed preset is --speeds now; --device is the device "
                         "ordinal, as in check, compare and state\n", o.device.c_str());
    return o.device;
}

/// The measured run as a query: the stated values, the device, the other files' runs.
WhatIfQuery queryOf(const WhatIfRequest& o, const ModelDims& dims, const WhatIfConstants& k, size_t di,
                    const TraceSource& source, const Calibrator& calibrator)
{
    WhatIfQuery q;
    q.device = di;
    q.dims = dims;
    q.constants = k;
    auto run = [&](const std::string& path, std::shared_ptr<const LoadedTrace> trace, const StatedConfig& stated) {
        CalibrationRun r{std::move(trace), stated, nullptr};
        if (calibrator) // MCP's cache of calibrations
            r.calibrated = std::make_shared<const Calibration>(calibrator(path, di, stated, dims));
        return r;
    };
    StatedConfig st = statedFor(o, 0);
    st.devices = o.measuredDevices;
    st.accum = o.measuredAccum;
    if (!o.measuredPrecision.empty()) {
        st.precision = precisionFromName(o.measuredPrecision);
        if (!st.precision)
            throw BadInput("--measured-precision: expected fp32, amp-bf16, amp-fp16 or bf16, got '" +
                           o.measuredPrecision + "'");
    }
    q.measured = run(o.files.front(), source(o.files.front()), st);
    for (size_t i = 1; i < o.files.size(); ++i) {
        auto other = source(o.files[i]);
        if (di >= other->snapshot.devices.size())
            throw BadInput(o.files[i] + ": has no device " + std::to_string(di));
        StatedConfig si = statedFor(o, i);
        si.devices = st.devices;
        si.precision = st.precision;
        q.others.push_back(run(o.files[i], other, si));
    }
    return q;
}

/// Calibrates on the first file and refits with the others.
Measured calibrateFiles(const WhatIfRequest& o, const ModelDims& dims, const WhatIfConstants& k, bool ladder,
                        std::optional<int64_t> capacity, const TraceSource& source, const Calibrator& calibrator)
{
    Measured m;
    auto trace = source(o.files.front());
    // The device the GUI opens unless one is named: the one with an OOM, else the highest peak.
    const std::optional<int> ordinal = deviceOrdinal(o);
    const size_t di = ordinal         ? pickDevice(*trace, ordinal, o.files.front())
                      : o.deviceIndex ? devicePosition(*trace, *o.deviceIndex, "--device-index")
                                      : size_t(primaryDeviceIndex(*trace));
    m.device = di;
    m.session.emplace(queryOf(o, dims, k, di, source, calibrator));
    if (m.session->fit() && !m.session->fit()->microBatchFit && !m.session->fit()->sequenceFit)
        throw BadInput("several FILEs: none differs from the first in micro-batch alone or sequence alone "
                       "(give --measured-micro-batch / --measured-seq per file, comma-separated)");
    m.items = m.cal()->measured;
    const CapacityEstimate traceCap = estimateCapacity(*trace, di, std::nullopt);
    m.traceCapacity = traceCap.bytes;
    m.traceCapacitySource = traceCap.source;
    if (ladder)
        m.allocatorVerdict = AllocatorVerdict::forOom(*trace, di, capacity.value_or(0));
    return m;
}

Measured analyticModel(const ModelDims& dims, const WhatIfConstants& k)
{
    if (!dims.valid())
        throw BadInput("give a trace FILE, or --model PRESET, or --layers, --hidden, --heads and --vocab "
                       "(and --params or --ffn) for analytic mode");
    Measured m;
    WhatIfQuery q;
    q.dims = dims;
    q.constants = k;
    q.start.microBatch = dims.microBatch;
    q.start.seq = dims.seq;
    m.session.emplace(q);
    m.items.push_back({"model", dims.name, "stated", "analytic mode"});
    return m;
}

bool onOff(const std::string& v, const char* flag)
{
    if (v == "on" || v == "true" || v == "1")
        return true;
    if (v == "off" || v == "false" || v == "0")
        return false;
    throw BadInput(std::string(flag) + ": expected on or off, got '" + v + "'");
}

/// The target: the measured configuration with the given levers moved.
LeverConfig targetOf(const WhatIfRequest& o, const Measured& m)
{
    LeverConfig t = m.base().config;
    if (o.microBatch)
        t.microBatch = *o.microBatch;
    if (o.accum)
        t.accum = *o.accum;
    if (o.seq)
        t.seq = *o.seq;
    if (!o.checkpoint.empty() && !checkpointFromName(o.checkpoint, t.checkpoint, t.checkpointEvery))
        throw BadInput("--checkpoint: expected none, selective, full or every:K, got '" + o.checkpoint + "'");
    if (!o.precision.empty()) {
        auto p = precisionFromName(o.precision);
        if (!p)
            throw BadInput("--precision: expected fp32, amp-bf16, amp-fp16 or bf16, got '" + o.precision + "'");
        t.precision = *p;
    }
    if (!o.optimizer.empty()) {
        auto p = optimizerFromName(o.optimizer);
        if (!p)
            throw BadInput("--optimizer: expected adamw, adamw-fused, adam8bit, adafactor, sgd or sgd-momentum, got '" +
                           o.optimizer + "'");
        t.optimizer = *p;
    }
    if (o.zero)
        t.zero = *o.zero;
    if (o.devices)
        t.devices = *o.devices;
    if (t.zero > 0 && !o.devices && t.devices <= 1 && !m.cal())
        throw BadInput("--zero needs --devices N (N > 1)");
    if (!o.offload.empty()) {
        auto p = offloadFromName(o.offload);
        if (!p)
            throw BadInput("--offload: expected none, optimizer or params, got '" + o.offload + "'");
        t.offload = *p;
    }
    if (!o.flashAttn.empty())
        t.flashAttention = onOff(o.flashAttn, "--flash-attn");
    if (!o.expandable.empty())
        t.expandableSegments = onOff(o.expandable, "--expandable-segments");
    if (o.loraFraction)
        t.trainableFraction = *o.loraFraction;
    if (m.cal())
        m.cal()->require(t);
    return t;
}

/// The device: a preset's speeds, the capacity given, else the OOM record's.
DeviceSpec deviceOf(const WhatIfRequest& o, std::optional<int64_t> capacity, Measured& m)
{
    const std::string preset = speedsPreset(o);
    std::optional<DeviceSpec> speeds;
    if (!preset.empty()) {
        speeds = devicePreset(preset);
        if (!speeds)
            throw BadInput("--speeds: unknown preset '" + preset + "' (" + joinWith(devicePresetNames()) + ")");
    }
    DeviceSpec dev = whatIfDevice(capacity.value_or(m.traceCapacity), speeds);
    if (dev.capacityBytes <= 0)
        dev.name = "capacity unknown (give --capacity; " + devicePreset("80gib")->name + " speeds)";
    if (!capacity && m.traceCapacity > 0)
        m.items.push_back({"capacity", formatBytes(m.traceCapacity), "read", m.traceCapacitySource});
    return dev;
}

/// --verify: the projection to AFTER's configuration against AFTER's measured peak.
CommandOutput verifyAgainst(const WhatIfRequest& o, const LeverConfig& t, const Measured& m, const WhatIfConstants& k,
                            const DeviceSpec& dev, const TraceSource& source)
{
    if (!m.cal())
        throw BadInput("--verify needs a trace FILE to calibrate on (the run before)");
    auto after = source(o.verify);
    const size_t di = devicePosition(*after, o.deviceIndex.value_or(int(m.device)), "--verify");
    LeverMask moved;
    moved.microBatch = o.microBatch.has_value();
    moved.accum = o.accum.has_value();
    moved.seq = o.seq.has_value();
    moved.precision = !o.precision.empty();
    moved.optimizer = !o.optimizer.empty();
    moved.devices = o.devices.has_value();
    moved.checkpoint = !o.checkpoint.empty();
    const Verification v = m.session->verify(*after, di, t, moved, dev);
    CommandOutput out;
    out.json = verificationJson(v);
    out.json["before"] = o.files.front();
    out.json["after"] = o.verify;
    out.json["projection"] = projectionJson(v.projection, m.items, k, dev);
    out.text = projectionText(v.projection, m.items, dev) + "\n" + verificationText(v);
    return out;
}

CommandOutput ladderOutput(const WhatIfRequest& o, const LeverConfig& t, const Measured& m, const WhatIfConstants&,
                           const DeviceSpec& dev)
{
    LadderRequest r;
    r.device = dev;
    r.availableDevices = o.availableDevices;
    r.allocator = m.allocatorVerdict;
    r.start = t;
    r.startUnits = BatchUnits::Measured;
    std::stringstream ss(o.currencyOrder);
    for (std::string item; std::getline(ss, item, ',');) {
        auto c = currencyFromName(item);
        if (!c)
            throw BadInput("--currency-order: unknown currency '" + item +
                           "' (engineering, throughput, fidelity, hardware)");
        r.currencyOrder.push_back(*c);
    }
    const Ladder l = m.session->ladder(r);
    CommandOutput out;
    out.json = ladderJson(l);
    nlohmann::json measured = nlohmann::json::object();
    for (const auto& it : m.items)
        measured[it.key] = {{"value", it.value}, {"how", it.how}, {"detail", it.detail}};
    out.json["measured"] = measured;
    out.text = ladderText(l);
    return out;
}

CommandOutput whatIfOutput(const WhatIfRequest& o, bool ladder, const TraceSource& source, const Calibrator& calibrator)
{
    WhatIfConstants k;
    if (!o.margin.empty())
        k.setMargin(percentOption("--margin", o.margin, 1.0, "10% (below 100%)"));
    const ModelDims dims = dimsOf(o);
    std::optional<int64_t> capacity;
    if (!o.capacity.empty()) {
        capacity = parseByteSize(o.capacity);
        if (!capacity)
            throw BadInput("--capacity: expected a size such as 80GiB, 24GB or 1073741824, got '" + o.capacity + "'");
    }
    if (o.measuredMicroBatch.size() > std::max<size_t>(1, o.files.size()) ||
        o.measuredSeq.size() > std::max<size_t>(1, o.files.size()))
        throw BadInput("--measured-micro-batch / --measured-seq: more values than FILEs");
    Measured m = o.files.empty() ? analyticModel(dims, k) : calibrateFiles(o, dims, k, ladder, capacity, source, calibrator);
    const LeverConfig t = targetOf(o, m);
    const DeviceSpec dev = deviceOf(o, capacity, m);
    if (ladder && dev.capacityBytes <= 0)
        throw BadInput("--capacity: the ladder needs the device capacity (the file has no OOM record that tells it), "
                       "e.g. --capacity 80GiB");
    if (!o.verify.empty())
        return verifyAgainst(o, t, m, k, dev, source);
    if (ladder)
        return ladderOutput(o, t, m, k, dev);
    const Projection p = m.session->project(t, dev);
    CommandOutput out;
    out.json = projectionJson(p, m.items, k, dev);
    out.text = projectionText(p, m.items, dev);
    return out;
}

} // namespace

CommandOutput runWhatIf(const WhatIfRequest& o, bool ladder, const TraceSource& source, const Calibrator& calibrator)
{
    try {
        return whatIfOutput(o, ladder, source, calibrator);
    } catch (const CommandError&) {
        throw;
    } catch (const std::runtime_error& e) { // BadInput, WhatIfMissingValue, the calibration's refusals
        throw CommandError(e.what());
    }
}

} // namespace headroom::cli
