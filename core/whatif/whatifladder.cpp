// SPDX-License-Identifier: MIT
#include "core/whatif/whatifladder.h"

#include "core/whatif/batchratio.h"
#include "core/whatif/projectedallocator.h"
#include "core/whatif/whatifcalibration.h"

#include "core/util/units.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace headroom {

namespace {

constexpr std::array<std::string_view, 4> kCurrency = {"engineering", "throughput", "fidelity", "hardware"};

/// One group of alternatives the ladder may spend: candidates cheapest first.
struct Tier {
    std::string title;
    Currency currency;
    double position; ///< the default order (docs/whatif-model.md, "The terms")
    bool staticMemory = false;
    bool activation = false;
    bool resultChanging = false;
    std::function<std::vector<std::pair<std::string, LeverConfig>>(const LeverConfig&)> candidates;
};

bool isAdam(OptimizerKind o) { return o == OptimizerKind::AdamW || o == OptimizerKind::AdamWFused; }

std::string percent(double rel)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.0f%% step time", (rel - 1) * 100);
    return buf;
}

std::vector<Tier> tiers(const LadderOptions& opt, const WhatIfBaseline& base)
{
    std::vector<Tier> t;
    using Cands = std::vector<std::pair<std::string, LeverConfig>>;
    t.push_back({"hygiene: fused optimizer, expandable segments, fused attention", Currency::Engineering, 1, false, false,
                 false, [](const LeverConfig& c) {
                     LeverConfig x = c;
                     if (x.optimizer == OptimizerKind::AdamW)
                         x.optimizer = OptimizerKind::AdamWFused;
                     x.expandableSegments = true;
                     x.flashAttention = true;
                     return Cands{{"hygiene (fused optimizer, expandable_segments, fused attention)", x}};
                 }});
    t.push_back({"smaller micro-batch with accumulation, or activation checkpointing", Currency::Throughput, 3, false, true,
                 false, [layers = base.layers, units = base.microBatchUnits](const LeverConfig& c) {
                     Cands out;
                     for (int b = c.microBatch / 2; b >= 1; b /= 2) {
                         LeverConfig x = c;
                         x.accum = c.accum * c.microBatch / b;
                         x.microBatch = b;
                         if (int64_t(x.microBatch) * x.accum == int64_t(c.microBatch) * c.accum)
                             out.push_back({"micro-batch " + microBatchText(b, units) + " x " + std::to_string(x.accum) +
                                                " accumulation steps", x});
                         if (b == 1)
                             break;
                     }
                     if (c.checkpoint == Checkpointing::None && !c.flashAttention) {
                         LeverConfig x = c;
                         x.checkpoint = Checkpointing::Selective;
                         out.push_back({"selective checkpointing (attention core)", x});
                     }
                     for (int every : {4, 2}) {
                         if (layers < 2 * every)
                             continue;
                         LeverConfig x = c;
                         x.checkpoint = Checkpointing::EveryK;
                         x.checkpointEvery = every;
                         if (c.checkpoint == Checkpointing::None || (c.checkpoint == Checkpointing::EveryK && c.checkpointEvery > every))
                             out.push_back({"checkpoint every " + std::to_string(every) + " layers", x});
                     }
                     if (c.checkpoint != Checkpointing::Full) {
                         LeverConfig x = c;
                         x.checkpoint = Checkpointing::Full;
                         out.push_back({"full activation checkpointing", x});
                     }
                     return out;
                 }});
    t.push_back({"mixed precision", Currency::Engineering, 4.5, true, false, false, [](const LeverConfig& c) {
                     LeverConfig x = c;
                     if (x.precision == Precision::Fp32)
                         x.precision = Precision::AmpBf16;
                     return Cands{{"mixed precision (bf16 autocast)", x}};
                 }});
    t.push_back({"8-bit optimizer", Currency::Fidelity, 5, true, false, false, [](const LeverConfig& c) {
                     LeverConfig x = c;
                     if (isAdam(x.optimizer))
                         x.optimizer = OptimizerKind::Adam8bit;
                     return Cands{{"8-bit Adam (bitsandbytes)", x}};
                 }});
    if (opt.availableDevices > 1)
        t.push_back({"sharding", Currency::Hardware, 6, true, false, false, [n = opt.availableDevices](const LeverConfig& c) {
                         Cands out;
                         for (int z = std::max(1, c.zero + 1); z <= 3; ++z) {
                             LeverConfig x = c;
                             x.zero = z;
                             x.devices = n;
                             out.push_back({"ZeRO-" + std::to_string(z) + " over " + std::to_string(n) + " devices", x});
                         }
                         return out;
                     }});
    t.push_back({"CPU offload", Currency::Throughput, 7, true, false, false, [](const LeverConfig& c) {
                     Cands out;
                     LeverConfig x = c;
                     if (c.offload == Offload::None) {
                         x.offload = Offload::Optimizer;
                         out.push_back({"offload the optimizer state to the CPU", x});
                     }
                     x.offload = Offload::Params;
                     if (c.offload != Offload::Params)
                         out.push_back({"offload optimizer state and parameters", x});
                     return out;
                 }});
    t.push_back({"pure bf16 / Adafactor", Currency::Fidelity, 8, true, false, false, [](const LeverConfig& c) {
                     Cands out;
                     LeverConfig x = c;
                     x.precision = Precision::Bf16;
                     out.push_back({"pure bf16 (no fp32 master)", x});
                     LeverConfig y = c;
                     y.optimizer = OptimizerKind::Adafactor;
                     out.push_back({"Adafactor", y});
                     return out;
                 }});
    if (opt.allowResultChanging) {
        t.push_back({"shorter sequences", Currency::Fidelity, 9, false, true, true, [](const LeverConfig& c) {
                         Cands out;
                         for (double f : {0.75, 0.5, 0.25}) {
                             LeverConfig x = c;
                             x.seq = std::max(1, int(c.seq * f));
                             out.push_back({"sequence length " + std::to_string(x.seq), x});
                         }
                         return out;
                     }});
        t.push_back({"LoRA / freezing", Currency::Fidelity, 10, true, false, true, [](const LeverConfig& c) {
                         LeverConfig x = c;
                         x.trainableFraction = std::min(c.trainableFraction, 0.01);
                         return Cands{{"LoRA adapters (1% trainable)", x}};
                     }});
    }
    // The user's currency order first, then the default order within a currency.
    auto rank = [&](const Tier& x) {
        if (opt.currencyOrder.empty() || x.position == 1)
            return x.position;
        auto it = std::find(opt.currencyOrder.begin(), opt.currencyOrder.end(), x.currency);
        return double(it - opt.currencyOrder.begin()) * 100 + x.position;
    };
    std::stable_sort(t.begin(), t.end(), [&](const Tier& a, const Tier& b) { return rank(a) < rank(b); });
    return t;
}

void describe(Rung& r, const Projection& prev, const Projection& startP, const LeverConfig& before)
{
    const LeverConfig& c = r.config;
    std::string eng = "none";
    if (c.checkpoint != before.checkpoint && c.checkpoint != Checkpointing::Full)
        eng = "medium (per-layer checkpoint policy)";
    else if (c.zero != before.zero || c.offload != before.offload)
        eng = "medium (DeepSpeed / FSDP configuration)";
    else if (c.trainableFraction != before.trainableFraction)
        eng = "medium (adapter setup)";
    else if (c != before)
        eng = "low";
    r.currencies.push_back({"engineering", eng});
    // Without a step time (no timestamps, no model to compute one) a ratio would read -100%.
    const bool timed = r.projection.time.known && r.projection.time.total > 0 && prev.time.total > 0;
    std::string throughput = "unknown (the trace has no step time)";
    if (timed) {
        // This rung's cost, and the whole ladder's so far when earlier rungs cost time too.
        const std::string step = percent(r.projection.time.total / prev.time.total);
        const std::string overall = percent(r.projection.time.relative);
        throughput = overall == step ? step : step + " (" + overall + " overall)";
    }
    r.currencies.push_back({"throughput", throughput});
    std::string fid = "none";
    if (c.trainableFraction != before.trainableFraction) {
        fid = "large: not a full fine-tune";
        r.changesResult = true;
    } else if (c.seq != before.seq) {
        fid = "large: shorter context";
        r.changesResult = true;
    } else if (c.precision == Precision::Bf16 && before.precision != Precision::Bf16) {
        fid = "medium: no fp32 master copy";
        r.numericalRisk = true;
    } else if (c.optimizer == OptimizerKind::Adafactor && before.optimizer != OptimizerKind::Adafactor) {
        fid = "medium: may converge differently";
        r.numericalRisk = true;
    } else if (c.optimizer == OptimizerKind::Adam8bit && before.optimizer != OptimizerKind::Adam8bit) {
        fid = "small: 8-bit optimizer state";
        r.numericalRisk = true;
    } else if (c.precision != before.precision) {
        fid = c.precision == Precision::AmpFp16 ? "small: fp16 needs loss scaling" : "small";
        r.numericalRisk = c.precision == Precision::AmpFp16;
    } else if (c.accum != before.accum) {
        fid = "none if the loss is normalised by the step's tokens (BatchNorm differs)";
    }
    r.currencies.push_back({"fidelity", fid});
    std::string hw = "none";
    // 0 devices is "unknown": a rung that fills in 1 adds no hardware.
    if (c.devices > before.deviceCount())
        hw = std::to_string(c.devices) + " devices";
    if (c.offload != Offload::None && before.offload == Offload::None)
        hw = "host RAM, about 16 bytes per trainable parameter";
    r.currencies.push_back({"hardware", hw});
    if (r.changesResult)
        r.warnings.push_back("changes the result: the run is no longer comparable to the previous ones");
    if (r.numericalRisk)
        r.warnings.push_back("numerical risk: validate the reduced precision before relying on it");
    (void)startP;
}

/// Rung 0 where the peak is an outlier batch (or one device far above the others): the
/// projection is of a steady-state iteration, so bounding the batch comes before any lever.
Rung batchBudgetRung(const LeverConfig& start, const Projection& steady)
{
    Rung r;
    r.kind = RungKind::BatchBudget;
    r.title = "bound each batch by a token budget";
    r.config = start;
    r.levers = {"batch budget"};
    r.projection = steady;
    r.currencies = {{"engineering", "a token budget in the data loader"}, {"throughput", "none"},
                    {"fidelity", "none"}, {"hardware", "none"}};
    r.warnings.push_back("the peak is an outlier batch (or one device far above the others): the projected peak is "
                         "a steady-state iteration's, which the budget keeps every batch to");
    return r;
}

} // namespace

std::string_view currencyName(Currency c) { return kCurrency[size_t(c)]; }

std::optional<Currency> currencyFromName(std::string_view s)
{
    for (size_t i = 0; i < kCurrency.size(); ++i)
        if (kCurrency[i] == s || kCurrency[i].substr(0, 1) == s)
            return Currency(i);
    if (s == "gpus" || s == "hw")
        return Currency::Hardware;
    return std::nullopt;
}

Ladder buildLadder(const WhatIfBaseline& base, const LeverConfig& start, const WhatIfConstants& k,
                   const DeviceSpec& dev, const LadderOptions& opt)
{
    Ladder L;
    auto projectCut = [&](const LeverConfig& c) {
        Projection p = project(base, c, k, dev);
        if (opt.simulate)
            simulateReserved(p, base, *opt.simulate);
        return p;
    };
    // A step the OOM cut short: every projection is of the whole step (cutstep.h).
    const double cutAllocated = opt.cutStep ? projectCut(base.config).peakAllocated : 0;
    auto proj = [&](const LeverConfig& c) {
        Projection p = projectCut(c);
        if (opt.cutStep)
            projectWholeStep(p, cutAllocated, *opt.cutStep);
        return p;
    };
    // What the trace cannot answer is left out, by the measured value it needs.
    std::map<std::string, std::vector<std::string>> leftOut;
    auto answerable = [&](const std::string& title, const LeverConfig& c) {
        const std::optional<WhatIfMissingValue> m =
            opt.calibration ? opt.calibration->missing(c, &start) : std::nullopt;
        if (m) {
            auto& titles = leftOut[m->key];
            if (std::find(titles.begin(), titles.end(), title) == titles.end())
                titles.push_back(title);
        }
        return !m;
    };
    L.start = proj(start);
    const double cHigh = std::max(base.context, base.contextHigh);
    const double budget = (double(dev.capacityBytes) - cHigh) * (1 - k.marginStructural);
    // A setting the replay found to avoid the recorded OOM costs nothing: it comes first, also
    // when the steady state fits and the OOM was an outlier batch (the batch budget follows it).
    const bool recordedMisses = !L.start.fits || opt.outlierBatch;
    if (recordedMisses && opt.allocator && opt.allocator->avoidsOom && start == base.config) {
        const AllocatorRungInput& a = *opt.allocator;
        Rung r;
        r.kind = RungKind::AllocatorSetting;
        r.title = "allocator setting PYTORCH_CUDA_ALLOC_CONF=" + a.setting;
        r.allocatorSetting = a.setting;
        r.config = start;
        r.config.expandableSegments = start.expandableSegments || a.setting.find("expandable_segments:True") != std::string::npos;
        r.levers = {"PYTORCH_CUDA_ALLOC_CONF=" + a.setting};
        // The replay runs the recorded requests through the allocator: a measurement of this
        // run, so it stands in for the model's steady-state estimate and has no band.
        r.projection = proj(r.config);
        r.projection.peak = r.projection.peakLow = r.projection.peakHigh = double(a.reservedPeak);
        r.projection.fits = true;
        r.projection.verdict = Verdict::Fits;
        r.currencies = {{"engineering", "none (an environment variable)"}, {"throughput", "none"},
                        {"fidelity", "none"}, {"hardware", "none"}};
        r.warnings.push_back(a.evidence + "; the peak shown is the replay's reserved peak, not the model's");
        L.rungs.push_back(std::move(r));
        L.firstFit = int(L.rungs.size()) - 1;
    } else if (opt.allocator && !opt.allocator->evidence.empty()) {
        L.warnings.push_back(opt.allocator->evidence);
    }
    if (opt.outlierBatch) {
        L.rungs.push_back(batchBudgetRung(start, L.start));
        if (L.start.fits) {
            if (L.firstFit < 0)
                L.firstFit = int(L.rungs.size()) - 1;
            return L;
        }
    }
    if (L.start.fits) {
        L.fitsAsIs = true;
        return L;
    }
    if (L.firstFit < 0 && (budget <= 0 || L.start.peakHigh - cHigh > 3 * budget)) {
        L.needsDifferentPlan = true;
        char times[48];
        std::snprintf(times, sizeof times, "%.1fx the usable memory", (L.start.peakHigh - cHigh) / budget);
        L.warnings.push_back(std::string("the job needs ") +
                             (budget > 0 ? times : "more than the device has outside the CUDA context") +
                             ": it needs a different plan, not a tweak; see the alternatives by currency");
    }
    // The bottleneck: does the job fit with the least activation memory it can have?
    auto floorOf = [&](const LeverConfig& c) {
        LeverConfig x = c;
        x.accum = c.accum * c.microBatch;
        x.microBatch = 1;
        x.checkpoint = Checkpointing::Full;
        x.flashAttention = true;
        LeverConfig y = c;
        y.checkpoint = Checkpointing::Full;
        y.flashAttention = true;
        return std::min(proj(x).peakHigh, proj(y).peakHigh);
    };
    const double actShare = [&] {
        const auto& ph = L.start.phases[0];
        double a = 0;
        for (const auto& comp : ph.components)
            if (comp.name.rfind("activations", 0) == 0 || comp.name == "temporaries_batch")
                a += comp.bytes;
        return ph.total > 0 ? a / ph.total : 0;
    }();
    std::vector<Tier> all = tiers(opt, base);
    if (opt.optimizerStateSuspect) {
        std::erase_if(all, [](const Tier& t) { return t.title == "8-bit optimizer" || t.title == "pure bf16 / Adafactor"; });
        L.warnings.push_back("the file's optimizer state breaks what an optimizer keeps (see the categories finding): "
                             "the 8-bit optimizer and Adafactor rungs are left out until a recording settles it");
    }
    LeverConfig cur = start;
    Projection curP = L.start;
    const bool staticBound = floorOf(cur) - cHigh > budget;
    L.bottleneck = staticBound ? "static memory (does not fit even at micro-batch 1 with full checkpointing)"
                               : (actShare > 0.5 ? "activations" : "mixed");
    // Order: hygiene, then the group that attacks the bottleneck, then the other, then what changes the result.
    std::vector<const Tier*> order;
    for (const auto& t : all)
        if (t.position == 1)
            order.push_back(&t);
    auto addGroup = [&](bool wantStatic) {
        for (const auto& t : all)
            if (t.position != 1 && !t.resultChanging && t.staticMemory == wantStatic && t.position < 8)
                order.push_back(&t);
    };
    addGroup(staticBound);
    addGroup(!staticBound);
    for (const auto& t : all)
        if (t.position >= 8 || t.resultChanging)
            if (std::find(order.begin(), order.end(), &t) == order.end())
                order.push_back(&t);

    for (const Tier* t : order) {
        if (L.firstFit >= 0)
            break;
        // Static levers only until the floor fits: then the activation levers can finish the job.
        if (t->staticMemory && staticBound && floorOf(cur) - cHigh <= budget && t->position < 8) {
            bool activationTried = false;
            for (const auto& r : L.rungs)
                activationTried = activationTried || r.activation;
            if (!activationTried)
                continue; // the floor fits now: spend on activations first
        }
        auto cands = t->candidates(cur);
        std::vector<std::pair<std::string, Projection>> evaluated;
        for (auto& [title, c] : cands)
            if (!(c == cur) && answerable(title, c))
                evaluated.push_back({title, proj(c)});
        if (evaluated.empty())
            continue;
        // The cheapest that fits; else the one that lowers the high estimate most.
        std::stable_sort(evaluated.begin(), evaluated.end(),
                         [](const auto& a, const auto& b) { return a.second.time.total < b.second.time.total; });
        const std::pair<std::string, Projection>* pick = nullptr;
        for (const auto& e : evaluated)
            if (e.second.fits) {
                pick = &e;
                break;
            }
        if (!pick) {
            for (const auto& e : evaluated)
                if (!pick || e.second.peakHigh < pick->second.peakHigh - 1e-6 * pick->second.peakHigh)
                    pick = &e;
            if (t->position != 1 && pick->second.peakHigh >= curP.peakHigh * 0.99)
                continue; // no gain: not worth its currency
        }
        Rung r;
        r.activation = t->activation;
        r.title = pick->first;
        r.config = pick->second.config;
        r.levers = r.config.differences(cur, base.microBatchUnits);
        r.projection = pick->second;
        describe(r, curP, L.start, cur);
        if (t->resultChanging && !r.changesResult) {
            r.changesResult = true;
            r.warnings.push_back("changes the result: the run is no longer comparable to the previous ones");
        }
        cur = r.config;
        curP = r.projection;
        L.rungs.push_back(std::move(r));
        if (curP.fits) {
            L.firstFit = int(L.rungs.size()) - 1;
            break;
        }
    }
    // Where each currency alone could get (shown always; essential when the miss is large).
    auto alt = [&](const char* currency, const std::string& title, LeverConfig c) {
        if (answerable(title, c))
            L.alternatives.push_back({currency, title, c, proj(c)});
    };
    LeverConfig hw = start;
    hw.zero = 3;
    hw.devices = std::max(8, opt.availableDevices);
    hw.optimizer = hw.optimizer == OptimizerKind::AdamW ? OptimizerKind::AdamWFused : hw.optimizer;
    alt("hardware", "ZeRO-3 over 8+ devices", hw);
    LeverConfig tp = start;
    tp.offload = Offload::Params;
    tp.checkpoint = Checkpointing::Full;
    tp.accum = start.accum * start.microBatch;
    tp.microBatch = 1;
    alt("throughput",
        "offload parameters and optimizer, full checkpointing, micro-batch " + microBatchText(1, base.microBatchUnits),
        tp);
    LeverConfig fi = start;
    fi.trainableFraction = 0.01;
    fi.precision = fi.precision == Precision::Fp32 ? Precision::AmpBf16 : fi.precision;
    fi.checkpoint = Checkpointing::Full;
    alt("fidelity", "LoRA (1% trainable) with full checkpointing", fi);
    for (const auto& [key, titles] : leftOut) {
        std::string w = "left out until the measured " + key + " is given (the trace does not tell it): ";
        for (size_t i = 0; i < titles.size(); ++i)
            w += (i ? "; " : "") + titles[i];
        L.warnings.push_back(std::move(w));
    }
    return L;
}

} // namespace headroom
