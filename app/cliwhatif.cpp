// SPDX-License-Identifier: MIT
#include "app/cliwhatif.h"

#include "app/clijson.h"

#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "core/util/join.h"
#include "core/util/units.h"
#include "core/whatif/allocatorverdict.h"
#include "core/whatif/projectedallocator.h"
#include "core/whatif/whatifcalibration.h"
#include "core/whatif/whatifjson.h"
#include "core/whatif/whatifladder.h"
#include "core/whatif/whatifmultifit.h"
#include "core/whatif/whatifverify.h"

#include <iostream>
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
    cmd->add_option("--micro-batch", o.microBatch, "Target micro-batch per device")->check(CLI::PositiveNumber);
    cmd->add_option("--accum", o.accum, "Target gradient-accumulation steps")->check(CLI::PositiveNumber);
    cmd->add_option("--seq", o.seq, "Target sequence length")->check(CLI::PositiveNumber);
    cmd->add_option("--checkpoint", o.checkpoint, "none|selective|full|every:K");
    cmd->add_option("--precision", o.precision, "fp32|amp-bf16|amp-fp16|bf16");
    cmd->add_option("--optimizer", o.optimizer, "adamw|adamw-fused|adam8bit|adafactor|sgd|sgd-momentum");
    cmd->add_option("--zero", o.zero, "ZeRO stage 0..3 (FSDP FULL_SHARD = 3)")->check(CLI::Range(0, 3));
    cmd->add_option("--devices", o.devices, "Data-parallel / sharding degree N")->check(CLI::PositiveNumber);
    cmd->add_option("--offload", o.offload, "none|optimizer|params");
    cmd->add_option("--flash-attn", o.flashAttn, "on|off");
    cmd->add_option("--lora-fraction", o.loraFraction, "Trainable fraction of the parameters (LoRA / freezing; 1 = full)")
        ->check(CLI::Range(1e-6, 1.0));
    cmd->add_option("--expandable-segments", o.expandable, "on|off");
    auto* cap = cmd->add_option("--capacity", o.capacity, "Device capacity, e.g. 80GiB, 24GB or a byte count");
    if (ladder)
        cap->required();
    cmd->add_option("--device", o.devicePreset, "Device speeds preset: 24gib, 40gib, 48gib, 80gib, a100-80gb, 94gib, 141gib");
    cmd->add_flag("--json", o.json, "Machine-readable JSON output");
    cmd->add_option("--measured-micro-batch", o.measuredMicroBatch,
                    "Micro-batch the trace was measured at (with several FILEs: one per file, comma-separated)")
        ->delimiter(',')
        ->check(CLI::PositiveNumber);
    cmd->add_option("--measured-seq", o.measuredSeq,
                    "Sequence length the trace was measured at (with several FILEs: one per file, comma-separated)")
        ->delimiter(',')
        ->check(CLI::PositiveNumber);
    cmd->add_option("--measured-precision", o.measuredPrecision, "Precision the trace was measured at");
    cmd->add_option("--measured-devices", o.measuredDevices, "Devices the trace's run used")->check(CLI::PositiveNumber);
    cmd->add_option("--measured-accum", o.measuredAccum, "Accumulation steps of the measured run")->check(CLI::PositiveNumber);
    cmd->add_option("--model", o.model, "Analytic preset: gpt2, llama2-7b, llama3-8b, llama2-70b");
    cmd->add_option("--layers", o.layers, "Layers")->check(CLI::PositiveNumber);
    cmd->add_option("--hidden", o.hidden, "Hidden size")->check(CLI::PositiveNumber);
    cmd->add_option("--heads", o.heads, "Attention heads")->check(CLI::PositiveNumber);
    cmd->add_option("--ffn", o.ffn, "MLP inner size")->check(CLI::PositiveNumber);
    cmd->add_option("--vocab", o.vocab, "Vocabulary")->check(CLI::PositiveNumber);
    cmd->add_option("--params", o.params, "Parameter count (e.g. 6.7e9)")->check(CLI::PositiveNumber);
    cmd->add_option("--device-index", o.deviceIndex, "Which device of a multi-device trace (position, default 0)");
    if (!ladder)
        cmd->add_option("--verify", o.verify,
                        "The run that followed (AFTER): project FILE to its configuration (the levers given, else "
                        "what AFTER's file tells) and compare with its measured peak, term by term");
    if (ladder) {
        cmd->add_option("--currency-order", o.currencyOrder,
                        "Spend these first, e.g. hardware,throughput,engineering,fidelity");
        cmd->add_option("--available-devices", o.availableDevices, "Devices available for sharding rungs")
            ->check(CLI::PositiveNumber);
    }
}

void WhatIfCommands::add(CLI::App& app)
{
    m_whatif = app.add_subcommand("whatif", "Project peak memory and step time for other levers (calibrated or analytic)");
    addCommon(m_whatif, m_w, false);
    m_ladder = app.add_subcommand("ladder", "Walk the levers cheapest currency first until the job fits");
    addCommon(m_ladder, m_l, true);
}

bool WhatIfCommands::parsed() const { return (m_whatif && m_whatif->parsed()) || (m_ladder && m_ladder->parsed()); }

int WhatIfCommands::run() { return m_whatif->parsed() ? runOne(m_w, false) : runOne(m_l, true); }

int WhatIfCommands::runOne(const Options& o, bool ladder)
{
    try {
        WhatIfConstants k;
        // Model dimensions: a preset, overridden by explicit flags.
        ModelDims dims;
        if (!o.model.empty()) {
            auto p = modelPreset(o.model);
            if (!p)
                throw BadInput("--model: unknown preset '" + o.model + "' (presets: " + joinWith(modelPresetNames()) + ")");
            dims = *p;
        }
        if (o.layers) dims.layers = *o.layers;
        if (o.hidden) dims.hidden = *o.hidden;
        if (o.heads) dims.heads = *o.heads;
        if (o.ffn) dims.ffn = *o.ffn;
        if (o.vocab) dims.vocab = *o.vocab;
        if (o.params) dims.params = *o.params;
        else if (o.model.empty() && dims.layers && dims.hidden && dims.vocab)
            dims.params = estimateParams(dims.layers, dims.hidden, dims.ffn, dims.vocab);
        if (dims.name.empty())
            dims.name = "custom";

        std::optional<int64_t> capacity;
        if (!o.capacity.empty()) {
            capacity = parseByteSize(o.capacity);
            if (!capacity)
                throw BadInput("--capacity: expected a size such as 80GiB, 24GB or 1073741824, got '" + o.capacity + "'");
        }
        WhatIfBaseline base;
        std::vector<MeasuredItem> measured;
        std::optional<Calibration> cal;
        bool outlier = false;
        bool optimizerStateSuspect = false;
        int64_t traceCapacity = 0;
        std::optional<AllocatorRungInput> allocatorRung;
        AllocatorConfig recordedAllocator; ///< the file's PYTORCH_CUDA_ALLOC_CONF, for the projected run's simulation
        const std::string file = o.files.empty() ? std::string() : o.files.front();
        if (o.measuredMicroBatch.size() > std::max<size_t>(1, o.files.size()) ||
            o.measuredSeq.size() > std::max<size_t>(1, o.files.size()))
            throw BadInput("--measured-micro-batch / --measured-seq: more values than FILEs");
        auto stated = [&](size_t i) {
            StatedConfig st;
            if (i < o.measuredMicroBatch.size()) st.microBatch = o.measuredMicroBatch[i];
            if (i < o.measuredSeq.size()) st.seq = o.measuredSeq[i];
            return st;
        };
        if (!file.empty()) {
            auto trace = Loader::load(file);
            if (o.deviceIndex < 0 || size_t(o.deviceIndex) >= trace->snapshot.devices.size())
                throw BadInput("--device-index: the trace has " + std::to_string(trace->snapshot.devices.size()) + " device(s)");
            const size_t di = size_t(o.deviceIndex);
            const DeviceAnalysis a = analyzeDevice(*trace, di);
            StatedConfig st = stated(0);
            st.devices = o.measuredDevices;
            st.accum = o.measuredAccum;
            if (!o.measuredPrecision.empty()) {
                st.precision = precisionFromName(o.measuredPrecision);
                if (!st.precision)
                    throw BadInput("--measured-precision: expected fp32, amp-bf16, amp-fp16 or bf16, got '" + o.measuredPrecision + "'");
            }
            cal = calibrate(*trace, di, a, st, dims, k);
            if (o.files.size() > 1) {
                std::vector<Calibration> runs{*cal};
                for (size_t i = 1; i < o.files.size(); ++i) {
                    auto other = Loader::load(o.files[i]);
                    if (di >= other->snapshot.devices.size())
                        throw BadInput(o.files[i] + ": has no device " + std::to_string(di));
                    StatedConfig si = stated(i);
                    si.devices = st.devices;
                    si.precision = st.precision;
                    runs.push_back(calibrate(*other, di, analyzeDevice(*other, di), si, dims, k));
                }
                const MultiFit fit = fitCalibrationRuns(runs, k);
                cal->baseline = fit.baseline;
                if (!fit.microBatchFit && !fit.sequenceFit)
                    throw BadInput("several FILEs: none differs from the first in micro-batch alone or sequence alone "
                                   "(give --measured-micro-batch / --measured-seq per file, comma-separated)");
            }
            base = cal->baseline;
            measured = cal->measured;
            outlier = cal->outlierBatch;
            optimizerStateSuspect = cal->optimizerStateSuspect;
            traceCapacity = estimateCapacity(*trace, di, std::nullopt).bytes;
            recordedAllocator = AllocatorConfig::fromSnapshot(trace->snapshot.allocatorSettings);
            if (ladder)
                if (auto v = AllocatorVerdict::forOom(*trace, di, capacity.value_or(0)))
                    allocatorRung = v->ladderInput();
        } else {
            if (!dims.valid())
                throw BadInput("give a trace FILE, or --model PRESET, or --layers, --hidden, --heads and --vocab "
                               "(and --params or --ffn) for analytic mode");
            LeverConfig c0;
            c0.microBatch = dims.microBatch;
            c0.seq = dims.seq;
            base = analyticBaseline(dims, c0, k);
            measured.push_back({"model", dims.name, "stated", "analytic mode"});
        }
        // The target: the measured configuration with the given levers moved.
        LeverConfig t = base.config;
        if (o.microBatch) t.microBatch = *o.microBatch;
        if (o.accum) t.accum = *o.accum;
        if (o.seq) t.seq = *o.seq;
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
                throw BadInput("--optimizer: expected adamw, adamw-fused, adam8bit, adafactor, sgd or sgd-momentum, got '" + o.optimizer + "'");
            t.optimizer = *p;
        }
        if (o.zero) t.zero = *o.zero;
        if (o.devices) t.devices = *o.devices;
        if (t.zero > 0 && !o.devices && t.devices <= 1 && !cal)
            throw BadInput("--zero needs --devices N (N > 1)");
        if (!o.offload.empty()) {
            auto p = offloadFromName(o.offload);
            if (!p)
                throw BadInput("--offload: expected none, optimizer or params, got '" + o.offload + "'");
            t.offload = *p;
        }
        auto onOff = [](const std::string& v, const char* flag) {
            if (v == "on" || v == "true" || v == "1") return true;
            if (v == "off" || v == "false" || v == "0") return false;
            throw BadInput(std::string(flag) + ": expected on or off, got '" + v + "'");
        };
        if (!o.flashAttn.empty()) t.flashAttention = onOff(o.flashAttn, "--flash-attn");
        if (!o.expandable.empty()) t.expandableSegments = onOff(o.expandable, "--expandable-segments");
        if (o.loraFraction) t.trainableFraction = *o.loraFraction;
        if (cal)
            cal->require(t);

        DeviceSpec dev;
        if (!o.devicePreset.empty()) {
            auto d = devicePreset(o.devicePreset);
            if (!d)
                throw BadInput("--device: unknown preset '" + o.devicePreset + "' (" + joinWith(devicePresetNames()) + ")");
            dev = *d;
        }
        const int64_t capBytes = capacity ? *capacity : (traceCapacity > 0 ? traceCapacity : dev.capacityBytes);
        if (o.devicePreset.empty())
            dev = capBytes > 0 ? deviceForCapacity(capBytes) : *devicePreset("80gib");
        dev.capacityBytes = capBytes;
        if (capBytes <= 0)
            dev.name = "capacity unknown (give --capacity; " + dev.name + " speeds)";
        if (!capacity && traceCapacity > 0)
            measured.push_back({"capacity", formatBytes(traceCapacity), "read", "OOM record"});

        if (!o.verify.empty()) {
            if (!cal)
                throw BadInput("--verify needs a trace FILE to calibrate on (the run before)");
            auto after = Loader::load(o.verify);
            if (o.deviceIndex < 0 || size_t(o.deviceIndex) >= after->snapshot.devices.size())
                throw BadInput("--verify: " + o.verify + " has " + std::to_string(after->snapshot.devices.size()) +
                               " device(s)");
            LeverMask moved;
            moved.microBatch = o.microBatch.has_value();
            moved.accum = o.accum.has_value();
            moved.seq = o.seq.has_value();
            moved.precision = !o.precision.empty();
            moved.optimizer = !o.optimizer.empty();
            moved.devices = o.devices.has_value();
            moved.checkpoint = !o.checkpoint.empty();
            const LeverConfig target = configOfAfter(t, moved, *after, size_t(o.deviceIndex));
            cal->require(target);
            const Verification v = verifyProjection(base, target, k, dev, *after, size_t(o.deviceIndex));
            if (o.json) {
                nlohmann::json j = verificationJson(v);
                j["before"] = file;
                j["after"] = o.verify;
                j["projection"] = projectionJson(v.projection, measured, k, dev);
                printJson(std::move(j));
            } else {
                std::cout << projectionText(v.projection, measured, dev) << "\n" << verificationText(v);
            }
            return 0;
        }
        if (ladder) {
            LadderOptions lo;
            lo.availableDevices = o.availableDevices;
            lo.outlierBatch = outlier;
            lo.optimizerStateSuspect = optimizerStateSuspect;
            lo.allocator = allocatorRung;
            std::stringstream ss(o.currencyOrder);
            for (std::string item; std::getline(ss, item, ',');) {
                auto c = currencyFromName(item);
                if (!c)
                    throw BadInput("--currency-order: unknown currency '" + item + "' (engineering, throughput, fidelity, hardware)");
                lo.currencyOrder.push_back(*c);
            }
            const Ladder l = buildLadder(base, t, k, dev, lo);
            if (o.json) {
                auto j = ladderJson(l);
                nlohmann::json m = nlohmann::json::object();
                for (const auto& it : measured)
                    m[it.key] = {{"value", it.value}, {"how", it.how}, {"detail", it.detail}};
                j["measured"] = m;
                printJson(std::move(j));
            } else {
                std::cout << ladderText(l);
            }
            return 0;
        }
        Projection p = project(base, t, k, dev);
        simulateReserved(p, base, recordedAllocator);
        if (o.json)
            printJson(projectionJson(p, measured, k, dev));
        else
            std::cout << projectionText(p, measured, dev);
        return 0;
    } catch (const WhatIfMissingValue& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const BadInput& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::runtime_error& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    }
}

} // namespace headroom::cli
