// SPDX-License-Identifier: MIT
#include "core/whatif/replay/traceprojector.h"
#include "core/replay/allocatorconstants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

namespace headroom {

namespace {

/// What the caching allocator hands out for `bytes` resized by `factor`: a multiple of 512
/// bytes. A tensor that shrinks (a smaller micro-batch) keeps its rounding: half of 2 x 300 B
/// is still 512 B. Unresized, the size as recorded (some sources record requested sizes).
double allocatorSize(double bytes, double factor)
{
    constexpr double kBlock = double(allocator::kMinBlock);
    if (factor == 1)
        return bytes;
    const double b = bytes * factor;
    return b <= 0 ? 0 : std::ceil(b / kBlock) * kBlock;
}

} // namespace

/// Per call: the factor of each law, and the lowest and highest factor of each set of
/// allowed laws (a bit mask over kSizeLawCount laws); the second set for the allocations over
/// s + tokenOffset() tokens.
struct TraceProjector::Factors {
    struct Set {
        std::array<double, kSizeLawCount> law{};
        std::array<double, 1u << kSizeLawCount> low{}, high{};
    };
    std::array<Set, 2> set;
    std::array<WidthFactors, kWidthClassCount> width;
    std::array<double, kStateRoleCount> role{1, 1, 1, 1, 1, 1};
    bool fused = false; ///< ReplayTarget::fusedAttention
    /// What the levers other than the laws' make of an allocation: its width and its role.
    /// `measured`: at the measured width (the build before a cast).
    double levers(const AllocationLaw& l, double WidthFactors::* which, bool measured = false) const
    {
        return (measured ? 1.0 : width[size_t(l.width)].*which) * role[size_t(l.role)];
    }
    /// The law's factors at the target for a reading (its central law, the laws it allows):
    /// central, lowest and highest. Fused attention makes no b*s^2 tensor: gone where read so,
    /// kept at its other readings' highest where it may be something else.
    struct Reading {
        double central, low, high;
    };
    Reading reading(SizeLaw central, unsigned allowed, bool offset) const
    {
        const Set& f = set[offset];
        constexpr unsigned kQuad = 1u << unsigned(SizeLaw::TokensBySeq);
        if (!fused || !(allowed & kQuad))
            return {f.law[size_t(central)], f.low[allowed], f.high[allowed]};
        const unsigned rest = allowed & ~kQuad;
        return {central == SizeLaw::TokensBySeq ? 0.0 : f.law[size_t(central)], 0.0, rest ? f.high[rest] : 0.0};
    }
    /// In a trace without recorded shapes, a tensor whose law only its size or its stack gave
    /// (no second run) and that the target grows more than 4x keeps the constant reading in the
    /// band's low end: a size that divides by b*s by coincidence (a weight's cast, a buffer)
    /// does not grow (issue 50).
    bool sizesAlone = false;
    Reading reading(const AllocationLaw& l) const
    {
        Reading r = reading(l.central, l.allowed, l.offset);
        const bool inferred =
            l.evidence == LawEvidence::Size || l.evidence == LawEvidence::Stack || l.evidence == LawEvidence::Mirror;
        if (sizesAlone && inferred && r.central > 4.0)
            r.low = std::min(r.low, 1.0);
        return r;
    }
    /// An allocation's bytes at the target: central, lowest and highest reading.
    void sizes(const AllocationLaw& law, double z, bool measured, double& zc, double& zl, double& zh) const
    {
        const Reading r = reading(law);
        zc = allocatorSize(z, r.central * levers(law, &WidthFactors::central, measured));
        zl = allocatorSize(z, r.low * levers(law, &WidthFactors::low, measured));
        zh = allocatorSize(z, r.high * levers(law, &WidthFactors::high, measured));
    }
    /// The central bytes at the target, unrounded (what visit() reports).
    double centralBytes(const AllocationLaw& law, double z, bool measured) const
    {
        return z * reading(law).central * levers(law, &WidthFactors::central, measured);
    }
};

TraceProjector::TraceProjector(const MemoryTimeline& tl, AllocationLaws laws, int b0, int s0, int64_t stoppedAt)
    : m_laws(std::move(laws)), m_b0(std::max(1, b0)), m_s0(std::max(1, s0)), m_stoppedAt(stoppedAt)
{
    if (tl.allocations.size() >= (size_t(1) << 31) || tl.allocated.size() >= (size_t(1) << 32))
        throw std::length_error("the replay takes at most 2^31 allocations and 2^32 events; this trace has " +
                                std::to_string(tl.allocations.size()) + " and " + std::to_string(tl.allocated.size()));
    m_size.reserve(tl.allocations.size());
    m_boundaries.reserve(2 * tl.allocations.size());
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        m_size.push_back(a.size);
        if (a.start == Allocation::kBeforeWindow)
            m_initial.push_back(uint32_t(i));
        else
            m_boundaries.push_back({uint32_t(a.start), uint32_t(i) << 1});
        if (a.end != Allocation::kStillAlive)
            m_boundaries.push_back({uint32_t(a.end), uint32_t(i) << 1 | 1u});
    }
    std::stable_sort(m_boundaries.begin(), m_boundaries.end(),
                     [](const Boundary& x, const Boundary& y) { return x.event < y.event; });
    const ReplayTarget atMeasured{double(m_b0), double(m_s0)};
    const TraceReplayPeak measured = replay(factors(atMeasured), atMeasured);
    m_measuredPeak = measured.central;
    m_measuredPeakEvent = measured.centralEvent;
}

TraceProjector::TraceProjector(const TraceProjector& from, AllocationLaws laws)
    : m_laws(std::move(laws)), m_size(from.m_size), m_initial(from.m_initial), m_boundaries(from.m_boundaries),
      m_b0(from.m_b0), m_s0(from.m_s0), m_measuredPeak(from.m_measuredPeak), m_measuredPeakEvent(from.m_measuredPeakEvent),
      m_stoppedAt(from.m_stoppedAt), m_plan(from.m_plan), m_accumulation(from.m_accumulation), m_cast(from.m_cast)
{
    if (from.m_autocast) // the refined laws under the same plans
        setAutocastPlan(from.m_autocastPlan);
    if (from.m_pureFlow)
        setPureFlowPlan(from.m_pureFlowPlan);
}

namespace {

std::vector<WidthClass> autocastWidths(const AutocastPlan& plan)
{
    std::vector<WidthClass> out(plan.narrowed.size());
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = plan.narrowed[i] ? WidthClass::Float : WidthClass::Fixed;
    return out;
}

std::vector<std::pair<uint32_t, WidthClass>> autocastCopies(const AutocastPlan& plan)
{
    std::vector<std::pair<uint32_t, WidthClass>> out;
    out.reserve(plan.copies.size());
    for (const AutocastPlan::Copy& c : plan.copies)
        out.emplace_back(c.source, c.narrow ? WidthClass::Float : WidthClass::Fixed);
    return out;
}

} // namespace

TraceProjector::TraceProjector(const TraceProjector& from, const AutocastPlan& plan, bool keepCast)
    : TraceProjector(from, from.m_laws.withWidths(autocastWidths(plan), autocastCopies(plan)))
{
    if (!keepCast)
        m_cast = {}; // an autocast run keeps its fp32 weights: nothing is cast after the build
    m_autocast.reset();
    m_pureFlow.reset();
    // At one event: the plan's releases, its copies, then the recorded boundaries.
    struct Ranked {
        uint32_t event;
        uint8_t rank;
        Boundary b;
    };
    std::vector<int64_t> early(m_size.size(), -1);
    for (const auto& [a, event] : plan.earlyEnds)
        early[a] = event;
    std::vector<Ranked> all;
    all.reserve(m_boundaries.size() + 2 * plan.copies.size());
    for (const Boundary& b : m_boundaries) {
        const bool moved = b.end() && early[b.alloc()] >= 0;
        all.push_back({moved ? uint32_t(early[b.alloc()]) : b.event, uint8_t(moved ? 0 : 2), b});
    }
    for (const AutocastPlan::Copy& c : plan.copies) {
        const auto index = uint32_t(m_size.size());
        m_size.push_back(int64_t(double(from.m_size[c.source]) * c.share + 0.5));
        all.push_back({uint32_t(c.start), 1, {uint32_t(c.start), index << 1}});
        if (c.end >= 0) {
            const auto end = uint32_t(std::max(c.end, c.start + 1));
            all.push_back({end, 0, {end, index << 1 | 1u}});
        }
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const Ranked& x, const Ranked& y) { return x.event != y.event ? x.event < y.event : x.rank < y.rank; });
    m_boundaries.clear();
    for (const Ranked& r : all)
        m_boundaries.push_back({r.event, r.b.allocAndEnd});
}

void TraceProjector::setAutocastPlan(AutocastPlan plan)
{
    m_autocastPlan = std::move(plan);
    m_autocast = m_autocastPlan.empty()
                     ? nullptr
                     : std::shared_ptr<const TraceProjector>(new TraceProjector(*this, m_autocastPlan, false));
}

void TraceProjector::setPureFlowPlan(AutocastPlan plan)
{
    m_pureFlowPlan = std::move(plan);
    m_pureFlow = m_pureFlowPlan.empty()
                     ? nullptr
                     : std::shared_ptr<const TraceProjector>(new TraceProjector(*this, m_pureFlowPlan, true));
}

const TraceProjector& TraceProjector::historyFor(const ReplayTarget& t, ReplayTarget& inner) const
{
    inner = t;
    if (t.autocast && m_autocast) {
        inner.autocast = false;
        inner.floatWidth = 0.5; // the plan's narrowed allocations; the rest are Fixed
        inner.castAfterBuild = false;
        return *m_autocast;
    }
    if (t.dtypeFlow && m_pureFlow && t.floatWidth < 1) {
        inner.dtypeFlow = false; // the flow's narrowed allocations at floatWidth, the rest Fixed
        return *m_pureFlow;
    }
    return *this;
}

TraceProjector::Factors TraceProjector::factors(const ReplayTarget& t) const
{
    Factors out;
    const double rb = t.microBatch / m_b0, c = m_laws.tokenOffset(), s = t.seq;
    const std::array<double, 2> rs{s / m_s0, (s + c) / (m_s0 + c)};
    for (size_t w = 0; w < kWidthClassCount; ++w)
        out.width[w] = widthFactors(WidthClass(w), t.floatWidth);
    out.role = {1, t.optimizerState, t.optimizerTemp, t.parameters, t.gradients, t.gathers};
    out.fused = t.fusedAttention;
    out.sizesAlone = m_laws.shapeRead() == 0;
    for (size_t k = 0; k < 2; ++k) {
        Factors::Set& f = out.set[k];
        for (size_t l = 0; l < kSizeLawCount; ++l)
            f.law[l] = lawFactor(SizeLaw(l), rb, rs[k]);
        for (size_t mask = 1; mask < f.low.size(); ++mask) {
            double lo = 1e300, hi = 0;
            for (size_t l = 0; l < kSizeLawCount; ++l)
                if (mask & (1u << l)) {
                    lo = std::min(lo, f.law[l]);
                    hi = std::max(hi, f.law[l]);
                }
            f.low[mask] = lo;
            f.high[mask] = hi;
        }
    }
    return out;
}

const std::vector<CheckpointPlan::Move>& TraceProjector::movesFor(const ReplayTarget& t,
                                                                  std::vector<CheckpointPlan::Move>& merged) const
{
    static const std::vector<CheckpointPlan::Move> kNone;
    if (!t.accumulated)
        return t.checkpointed ? m_plan.moves : kNone;
    if (!t.checkpointed)
        return m_accumulation.moves;
    merged.clear();
    std::merge(m_plan.moves.begin(), m_plan.moves.end(), m_accumulation.moves.begin(), m_accumulation.moves.end(),
               std::back_inserter(merged),
               [](const CheckpointPlan::Move& x, const CheckpointPlan::Move& y) { return x.event < y.event; });
    return merged;
}

template <class F>
void TraceProjector::walk(const ReplayTarget& t, F&& f) const
{
    std::vector<CheckpointPlan::Move> merged;
    const std::vector<CheckpointPlan::Move>& moves = movesFor(t, merged);
    const int64_t castAt = t.castAfterBuild ? m_cast.event : -1;
    bool castPending = castAt >= 0;
    auto cast = [&] {
        castPending = false;
        for (uint32_t alloc : m_cast.cast) {
            f(castAt, alloc, false, true, false); // its copy at the target width
            f(castAt, alloc, true, true, true);   // the original freed
        }
    };
    // At one event: the moves' releases, the recorded boundaries, then the moves' allocations.
    auto rank = [](bool extra, bool end) { return extra ? (end ? 0 : 2) : 1; };
    size_t i = 0, j = 0;
    while (i < m_boundaries.size() || j < moves.size()) {
        bool takeMove = false;
        if (j < moves.size()) {
            if (i == m_boundaries.size())
                takeMove = true;
            else {
                const Boundary& b = m_boundaries[i];
                const CheckpointPlan::Move& m = moves[j];
                takeMove = m.event != int64_t(b.event) ? m.event < int64_t(b.event) : rank(true, m.end) < rank(false, b.end());
            }
        }
        const int64_t event = takeMove ? moves[j].event : int64_t(m_boundaries[i].event);
        if (castPending && event >= castAt)
            cast();
        const uint32_t alloc = takeMove ? moves[j].alloc : m_boundaries[i].alloc();
        const bool end = takeMove ? moves[j].end : m_boundaries[i].end();
        takeMove ? ++j : ++i;
        const bool last = (i == m_boundaries.size() || int64_t(m_boundaries[i].event) != event) &&
                          (j == moves.size() || moves[j].event != event);
        f(event, alloc, end, last, !takeMove && event < castAt && m_cast.builtBefore(alloc));
    }
    if (castPending)
        cast();
}

TraceReplayPeak TraceProjector::replay(const Factors& fs, const ReplayTarget& t) const
{
    const auto& laws = m_laws.laws();
    double c = 0, lo = 0, hi = 0;
    auto sizes = [&](uint32_t i, bool measured, double& zc, double& zl, double& zh) {
        fs.sizes(laws[i], double(m_size[i]), measured, zc, zl, zh);
    };
    for (uint32_t i : m_initial) {
        double zc, zl, zh;
        sizes(i, false, zc, zl, zh);
        c += zc, lo += zl, hi += zh;
    }
    c += t.standing, lo += t.standingLow, hi += t.standingHigh;
    TraceReplayPeak p{c, lo, hi, -1, -1, -1};
    if (t.checkpointed)
        p = {0, 0, 0, -1, -1, -1};
    walk(t, [&](int64_t event, uint32_t alloc, bool end, bool last, bool measured) {
        double zc, zl, zh;
        sizes(alloc, measured, zc, zl, zh);
        const double sign = end ? -1 : 1;
        c += sign * zc, lo += sign * zl, hi += sign * zh;
        if (!last || !counts(event, t.checkpointed))
            return; // the event's other boundaries first
        if (c > p.central) p.central = c, p.centralEvent = event;
        if (lo > p.low) p.low = lo, p.lowEvent = event;
        if (hi > p.high) p.high = hi, p.highEvent = event;
    });
    return p;
}

void TraceProjector::visit(const ReplayTarget& target,
                           const std::function<void(int64_t event, uint32_t alloc, bool end, double bytes)>& f) const
{
    ReplayTarget t;
    if (const TraceProjector& h = historyFor(target, t); &h != this)
        return h.visit(t, f);
    const Factors fs = factors(t);
    const auto& laws = m_laws.laws();
    auto bytes = [&](uint32_t i, bool measured) { return fs.centralBytes(laws[i], double(m_size[i]), measured); };
    const ReplayTarget e = effective(t);
    if (e.checkpointed) // only the plan's iterations are the checkpointed run
        return visitWindow(e, bytes, f);
    for (uint32_t i : m_initial)
        f(-1, i, false, bytes(i, false));
    walk(e, [&](int64_t event, uint32_t alloc, bool end, bool, bool measured) {
        f(event, alloc, end, bytes(alloc, measured));
    });
}

void TraceProjector::visitWindow(const ReplayTarget& e, const std::function<double(uint32_t, bool)>& bytes,
                                 const std::function<void(int64_t event, uint32_t alloc, bool end, double bytes)>& f) const
{
    // What is alive when the plan's window opens is requested there, in the order it was made
    // (the history before it is iterations the plan does not transform: the replay's peak does
    // not count them either); what the window makes and frees follows; nothing after it.
    std::vector<double> alive(m_size.size(), -1.0);
    for (uint32_t i : m_initial)
        alive[i] = bytes(i, false);
    std::vector<uint32_t> order(m_initial.begin(), m_initial.end());
    bool opened = false;
    walk(e, [&](int64_t event, uint32_t alloc, bool end, bool, bool measured) {
        if (event > m_plan.to)
            return;
        if (event < m_plan.from) {
            if (end)
                alive[alloc] = -1.0;
            else
                alive[alloc] = bytes(alloc, measured), order.push_back(alloc);
            return;
        }
        if (!opened) {
            opened = true;
            for (uint32_t i : order)
                if (alive[i] >= 0)
                    f(m_plan.from, i, false, alive[i]), alive[i] = -1.0;
        }
        f(event, alloc, end, bytes(alloc, measured));
    });
}

TraceProjector::Curve TraceProjector::curve(const ReplayTarget& target, size_t events) const
{
    ReplayTarget t;
    if (const TraceProjector& h = historyFor(target, t); &h != this)
        return h.curve(t, events);
    const ReplayTarget e = effective(t);
    const Factors fs = factors(t);
    Curve out = curveOf(fs, e, events);
    if (e.castAfterBuild) { // the band's low edge: the model built at the target width
        ReplayTarget built = e;
        built.castAfterBuild = false;
        out.low = curveOf(fs, built, events).low;
    }
    return out;
}

TraceProjector::Curve TraceProjector::curveOf(const Factors& fs, const ReplayTarget& e, size_t events) const
{
    const auto& laws = m_laws.laws();
    double c = 0, lo = 0, hi = 0;
    auto add = [&](uint32_t i, double sign, bool measured) {
        double zc, zl, zh;
        fs.sizes(laws[i], double(m_size[i]), measured, zc, zl, zh);
        c += sign * zc, lo += sign * zl, hi += sign * zh;
    };
    for (uint32_t i : m_initial)
        add(i, 1, false);
    c += e.standing, lo += e.standingLow, hi += e.standingHigh;
    Curve out;
    out.central.reserve(events);
    out.low.reserve(events / Curve::kBandBlock + 1);
    out.high.reserve(events / Curve::kBandBlock + 1);
    // Events without a boundary keep the bytes after the one before them.
    auto fillTo = [&](size_t n) {
        while (out.central.size() < std::min(n, events)) {
            const bool opensBlock = out.central.size() % Curve::kBandBlock == 0;
            out.central.push_back(float(c));
            if (opensBlock) {
                out.low.push_back(float(lo));
                out.high.push_back(float(hi));
            } else {
                out.low.back() = std::min(out.low.back(), float(lo));
                out.high.back() = std::max(out.high.back(), float(hi));
            }
        }
    };
    walk(e, [&](int64_t event, uint32_t alloc, bool end, bool, bool measured) {
        fillTo(size_t(event));
        add(alloc, end ? -1 : 1, measured);
    });
    fillTo(events);
    return out;
}

TraceReplayPeak TraceProjector::project(const ReplayTarget& target) const
{
    ReplayTarget t;
    if (const TraceProjector& h = historyFor(target, t); &h != this)
        return h.project(t);
    const ReplayTarget e = effective(t);
    const Factors fs = factors(t);
    TraceReplayPeak p = replay(fs, e);
    if (e.castAfterBuild) { // the band's low edge: the model built at the target width
        ReplayTarget built = e;
        built.castAfterBuild = false;
        const TraceReplayPeak q = replay(fs, built);
        p.low = q.low, p.lowEvent = q.lowEvent;
        p.builtNarrow = q.central;
    }
    return p;
}

std::vector<AmbiguityWorth> TraceProjector::worth(const ReplayTarget& target, size_t count, const TraceReplayPeak* at) const
{
    ReplayTarget t;
    if (const TraceProjector& h = historyFor(target, t); &h != this)
        return h.worth(t, count, at);
    const ReplayTarget e = effective(t);
    // What each group holds at the central peak, read its other ways: the peak moves at least
    // that much (more where the group's own peak is elsewhere).
    const Factors fs = factors(t);
    const TraceReplayPeak p = at ? *at : replay(fs, e);
    const auto& laws = m_laws.laws();
    std::vector<double> live(m_laws.ambiguities().size() + 1, 0.0);
    auto widthBytes = [&](uint32_t i, bool measured) {
        return double(m_size[i]) * fs.levers(laws[i], &WidthFactors::central, measured);
    };
    for (uint32_t i : m_initial)
        live[laws[i].group] += widthBytes(i, false);
    bool past = false;
    walk(e, [&](int64_t event, uint32_t alloc, bool end, bool, bool measured) {
        past = past || event > p.centralEvent;
        if (!past)
            live[laws[alloc].group] += (end ? -1.0 : 1.0) * widthBytes(alloc, measured);
    });
    std::vector<AmbiguityWorth> out;
    for (size_t g = 0; g < m_laws.ambiguities().size(); ++g) {
        const LawAmbiguity& a = m_laws.ambiguities()[g];
        const auto [central, low, high] = fs.reading(a.central, a.allowed, a.offset);
        const double up = live[g + 1] * (high - central);
        const double down = live[g + 1] * (central - low);
        if (up + down > 0.001 * p.central)
            out.push_back({g, p.central - down, p.central + up});
    }
    std::sort(out.begin(), out.end(),
              [](const AmbiguityWorth& x, const AmbiguityWorth& y) { return x.high - x.low > y.high - y.low; });
    if (out.size() > count)
        out.resize(count);
    return out;
}

} // namespace headroom
