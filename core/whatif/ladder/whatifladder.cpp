// SPDX-License-Identifier: MIT
#include "core/whatif/ladder/whatifladder.h"

#include "core/whatif/calibration/batchratio.h"
#include "core/whatif/projection/projectedallocator.h"
#include "core/whatif/calibration/whatifcalibration.h"

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
                         for (const auto& [f, share] : {std::pair{0.75, "3/4"}, {0.5, "1/2"}, {0.25, "1/4"}}) {
                             LeverConfig x = c;
                             x.seq = std::max(1, int(c.seq * f));
                             // An unknown sequence is 1 here: "sequence length 1" named no lever.
                             out.push_back({c.seq > 1 ? "sequence length " + std::to_string(x.seq)
                                                      : std::string("sequence x") + share, x});
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

namespace {

/// One ladder being built (buildLadder): the projections it makes, what the trace cannot
/// answer, and the rungs so far.
class LadderBuilder {
public:
    LadderBuilder(const WhatIfBaseline& base, const LeverConfig& start, const WhatIfConstants& k, const DeviceSpec& dev,
                  const LadderOptions& opt)
        : m_base(base), m_start(start), m_k(k), m_dev(dev), m_opt(opt)
    {
    }

    Ladder build();

private:
    Projection projectCut(const LeverConfig& c) const;
    /// The projection of `c`, of the whole step where the OOM cut the recorded one short.
    Projection proj(const LeverConfig& c) const;
    /// Whether the trace can answer `c`; if not, `title` is left out by the value it needs.
    bool answerable(const std::string& title, const LeverConfig& c);
    /// The free allocator setting and the batch budget, before any lever; whether the ladder
    /// ends there (it fits as it is, or the budget is enough).
    bool settleBeforeLevers();
    void warnIfDifferentPlan();
    /// The least the step can take with the least activation memory it can have.
    double floorOf(const LeverConfig& c) const;
    double activationShare() const;
    /// Hygiene, then the group that attacks the bottleneck, then the other, then what
    /// changes the result.
    std::vector<const Tier*> order(const std::vector<Tier>& all, bool staticBound) const;
    /// The candidate of `t` to spend on from `cur`: the cheapest that fits, else the one that
    /// lowers the high estimate most (none when nothing gains).
    std::optional<std::pair<std::string, Projection>> pick(const Tier& t, const LeverConfig& cur, const Projection& curP);
    void climb(const std::vector<const Tier*>& order, bool staticBound);
    /// Where each currency alone could get (shown always; essential when the miss is large).
    void addAlternatives();
    void warnLeftOut();

    const WhatIfBaseline& m_base;
    const LeverConfig& m_start;
    const WhatIfConstants& m_k;
    const DeviceSpec& m_dev;
    const LadderOptions& m_opt;
    Ladder m_ladder;
    double m_cutAllocated = 0;
    double m_context = 0; ///< the CUDA context's high estimate
    double m_budget = 0;  ///< what the levers may fill
    std::map<std::string, std::vector<std::string>> m_leftOut;
};

Projection LadderBuilder::projectCut(const LeverConfig& c) const
{
    Projection p = project(m_base, c, m_k, m_dev);
    if (m_opt.simulate)
        simulateReserved(p, m_base, *m_opt.simulate);
    return p;
}

Projection LadderBuilder::proj(const LeverConfig& c) const
{
    Projection p = projectCut(c);
    if (m_opt.cutStep)
        projectWholeStep(p, m_cutAllocated, *m_opt.cutStep);
    return p;
}

bool LadderBuilder::answerable(const std::string& title, const LeverConfig& c)
{
    const std::optional<WhatIfMissingValue> m =
        m_opt.calibration ? m_opt.calibration->missing(c, &m_start) : std::nullopt;
    if (m) {
        auto& titles = m_leftOut[m->key];
        if (std::find(titles.begin(), titles.end(), title) == titles.end())
            titles.push_back(title);
    }
    return !m;
}

bool LadderBuilder::settleBeforeLevers()
{
    Ladder& L = m_ladder;
    // A setting the replay found to avoid the recorded OOM costs nothing: it comes first, also
    // when the steady state fits and the OOM was an outlier batch (the batch budget follows it).
    const bool recordedMisses = !L.start.fits || m_opt.outlierBatch;
    if (recordedMisses && m_opt.allocator && m_opt.allocator->avoidsOom && m_start == m_base.config) {
        const AllocatorRungInput& a = *m_opt.allocator;
        Rung r;
        r.kind = RungKind::AllocatorSetting;
        r.title = "allocator setting PYTORCH_CUDA_ALLOC_CONF=" + a.setting;
        r.allocatorSetting = a.setting;
        r.config = m_start;
        r.config.expandableSegments = m_start.expandableSegments || a.setting.find("expandable_segments:True") != std::string::npos;
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
    } else if (m_opt.allocator && !m_opt.allocator->evidence.empty()) {
        L.warnings.push_back(m_opt.allocator->evidence);
    }
    if (m_opt.outlierBatch) {
        L.rungs.push_back(batchBudgetRung(m_start, L.start));
        if (L.start.fits) {
            if (L.firstFit < 0)
                L.firstFit = int(L.rungs.size()) - 1;
            return true;
        }
    }
    if (L.start.fits) {
        L.fitsAsIs = true;
        return true;
    }
    return false;
}

void LadderBuilder::warnIfDifferentPlan()
{
    Ladder& L = m_ladder;
    // On the central estimate: how wide the band is (what dimensions alone cannot tell, in the
    // analytic mode) does not make a job that needs a tweak one that needs another plan.
    if (L.firstFit >= 0 || (m_budget > 0 && L.start.peak - m_context <= 3 * m_budget))
        return;
    L.needsDifferentPlan = true;
    char times[48];
    std::snprintf(times, sizeof times, "%.1fx the usable memory", (L.start.peak - m_context) / m_budget);
    L.warnings.push_back(std::string("the job needs ") +
                         (m_budget > 0 ? times : "more than the device has outside the CUDA context") +
                         ": it needs a different plan, not a tweak; see the alternatives by currency");
}

double LadderBuilder::floorOf(const LeverConfig& c) const
{
    LeverConfig x = c;
    x.accum = c.accum * c.microBatch;
    x.microBatch = 1;
    x.checkpoint = Checkpointing::Full;
    x.flashAttention = true;
    LeverConfig y = c;
    y.checkpoint = Checkpointing::Full;
    y.flashAttention = true;
    return std::min(proj(x).peakHigh, proj(y).peakHigh);
}

double LadderBuilder::activationShare() const
{
    const auto& ph = m_ladder.start.phases[0];
    double a = 0;
    for (const auto& comp : ph.components)
        if (comp.name.rfind("activations", 0) == 0 || comp.name == "temporaries_batch")
            a += comp.bytes;
    return ph.total > 0 ? a / ph.total : 0;
}

std::vector<const Tier*> LadderBuilder::order(const std::vector<Tier>& all, bool staticBound) const
{
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
    return order;
}

std::optional<std::pair<std::string, Projection>> LadderBuilder::pick(const Tier& t, const LeverConfig& cur,
                                                                      const Projection& curP)
{
    std::vector<std::pair<std::string, Projection>> evaluated;
    for (auto& [title, c] : t.candidates(cur))
        if (!(c == cur) && answerable(title, c))
            evaluated.push_back({title, proj(c)});
    if (evaluated.empty())
        return std::nullopt;
    std::stable_sort(evaluated.begin(), evaluated.end(),
                     [](const auto& a, const auto& b) { return a.second.time.total < b.second.time.total; });
    for (const auto& e : evaluated)
        if (e.second.fits)
            return e;
    const std::pair<std::string, Projection>* best = nullptr;
    for (const auto& e : evaluated)
        if (!best || e.second.peakHigh < best->second.peakHigh - 1e-6 * best->second.peakHigh)
            best = &e;
    if (t.position != 1 && best->second.peakHigh >= curP.peakHigh * 0.99)
        return std::nullopt; // no gain: not worth its currency
    return *best;
}

void LadderBuilder::climb(const std::vector<const Tier*>& order, bool staticBound)
{
    Ladder& L = m_ladder;
    LeverConfig cur = m_start;
    Projection curP = L.start;
    for (const Tier* t : order) {
        if (L.firstFit >= 0)
            break;
        // Static levers only until the floor fits: then the activation levers can finish the job.
        if (t->staticMemory && staticBound && floorOf(cur) - m_context <= m_budget && t->position < 8) {
            bool activationTried = false;
            for (const auto& r : L.rungs)
                activationTried = activationTried || r.activation;
            if (!activationTried)
                continue; // the floor fits now: spend on activations first
        }
        const auto chosen = pick(*t, cur, curP);
        if (!chosen)
            continue;
        Rung r;
        r.activation = t->activation;
        r.title = chosen->first;
        r.config = chosen->second.config;
        r.levers = r.config.differences(cur, m_base.microBatchUnits);
        r.projection = chosen->second;
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
}

void LadderBuilder::addAlternatives()
{
    auto alt = [&](const char* currency, const std::string& title, LeverConfig c) {
        if (answerable(title, c))
            m_ladder.alternatives.push_back({currency, title, c, proj(c)});
    };
    LeverConfig hw = m_start;
    hw.zero = 3;
    hw.devices = std::max(8, m_opt.availableDevices);
    hw.optimizer = hw.optimizer == OptimizerKind::AdamW ? OptimizerKind::AdamWFused : hw.optimizer;
    alt("hardware", "ZeRO-3 over 8+ devices", hw);
    LeverConfig tp = m_start;
    tp.offload = Offload::Params;
    tp.checkpoint = Checkpointing::Full;
    tp.accum = m_start.accum * m_start.microBatch;
    tp.microBatch = 1;
    alt("throughput",
        "offload parameters and optimizer, full checkpointing, micro-batch " + microBatchText(1, m_base.microBatchUnits),
        tp);
    LeverConfig fi = m_start;
    fi.trainableFraction = 0.01;
    fi.precision = fi.precision == Precision::Fp32 ? Precision::AmpBf16 : fi.precision;
    fi.checkpoint = Checkpointing::Full;
    alt("fidelity", "LoRA (1% trainable) with full checkpointing", fi);
}

void LadderBuilder::warnLeftOut()
{
    for (const auto& [key, titles] : m_leftOut) {
        std::string w = "left out until the measured " + key + " is given (the trace does not tell it): ";
        for (size_t i = 0; i < titles.size(); ++i)
            w += (i ? "; " : "") + titles[i];
        m_ladder.warnings.push_back(std::move(w));
    }
}

Ladder LadderBuilder::build()
{
    Ladder& L = m_ladder;
    // A step the OOM cut short: every projection is of the whole step (cutstep.h).
    m_cutAllocated = m_opt.cutStep ? projectCut(m_base.config).peakAllocated : 0;
    L.start = proj(m_start);
    m_context = std::max(m_base.context, m_base.contextHigh);
    m_budget = (double(m_dev.capacityBytes) - m_context) * (1 - m_k.marginStructural);
    if (settleBeforeLevers())
        return std::move(m_ladder);
    warnIfDifferentPlan();
    // The bottleneck: does the job fit with the least activation memory it can have?
    const double actShare = activationShare();
    std::vector<Tier> all = tiers(m_opt, m_base);
    if (m_opt.optimizerStateSuspect) {
        std::erase_if(all, [](const Tier& t) { return t.title == "8-bit optimizer" || t.title == "pure bf16 / Adafactor"; });
        L.warnings.push_back("the file's optimizer state breaks what an optimizer keeps (see the categories finding): "
                             "the 8-bit optimizer and Adafactor rungs are left out until a recording settles it");
    }
    const bool staticBound = floorOf(m_start) - m_context > m_budget;
    L.bottleneck = staticBound ? "static memory (does not fit even at micro-batch 1 with full checkpointing)"
                               : (actShare > 0.5 ? "activations" : "mixed");
    climb(order(all, staticBound), staticBound);
    addAlternatives();
    warnLeftOut();
    return std::move(m_ladder);
}

} // namespace

Ladder buildLadder(const WhatIfBaseline& base, const LeverConfig& start, const WhatIfConstants& k,
                   const DeviceSpec& dev, const LadderOptions& opt)
{
    return LadderBuilder(base, start, k, dev, opt).build();
}

} // namespace headroom
