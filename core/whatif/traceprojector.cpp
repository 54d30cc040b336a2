// SPDX-License-Identifier: MIT
#include "core/whatif/traceprojector.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace headroom {

namespace {

/// What the caching allocator hands out for `bytes` resized by `factor`: a multiple of 512
/// bytes. A tensor that shrinks (a smaller micro-batch) keeps its rounding: half of 2 x 300 B
/// is still 512 B. Unresized, the size as recorded (some sources record requested sizes).
double allocatorSize(double bytes, double factor)
{
    constexpr double kBlock = 512;
    if (factor == 1)
        return bytes;
    const double b = bytes * factor;
    return b <= 0 ? 0 : std::ceil(b / kBlock) * kBlock;
}

} // namespace

/// Per call: the factor of each law, and the lowest and highest factor of each set of
/// allowed laws (a bit mask over kSizeLawCount laws).
struct TraceProjector::Factors {
    std::array<double, kSizeLawCount> law{};
    std::array<double, 1u << kSizeLawCount> low{}, high{};
};

TraceProjector::TraceProjector(const MemoryTimeline& tl, AllocationLaws laws, int b0, int s0, int64_t stoppedAt)
    : m_laws(std::move(laws)), m_b0(std::max(1, b0)), m_s0(std::max(1, s0)), m_stoppedAt(stoppedAt)
{
    m_size.reserve(tl.allocations.size());
    m_boundaries.reserve(2 * tl.allocations.size());
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        m_size.push_back(a.size);
        if (a.start == Allocation::kBeforeWindow)
            m_initial.push_back(uint32_t(i));
        else
            m_boundaries.push_back({a.start, uint32_t(i), false});
        if (a.end != Allocation::kStillAlive)
            m_boundaries.push_back({a.end, uint32_t(i), true});
    }
    std::stable_sort(m_boundaries.begin(), m_boundaries.end(),
                     [](const Boundary& x, const Boundary& y) { return x.event < y.event; });
    const TraceReplayPeak measured = replay(factors(m_b0, m_s0));
    m_measuredPeak = measured.central;
    m_measuredPeakEvent = measured.centralEvent;
}

TraceProjector::TraceProjector(const TraceProjector& from, AllocationLaws laws)
    : m_laws(std::move(laws)), m_size(from.m_size), m_initial(from.m_initial), m_boundaries(from.m_boundaries),
      m_b0(from.m_b0), m_s0(from.m_s0), m_measuredPeak(from.m_measuredPeak), m_measuredPeakEvent(from.m_measuredPeakEvent),
      m_stoppedAt(from.m_stoppedAt)
{
}

TraceProjector::Factors TraceProjector::factors(double b, double s) const
{
    Factors f;
    const double rb = b / m_b0, rs = s / m_s0;
    for (size_t l = 0; l < kSizeLawCount; ++l)
        f.law[l] = lawFactor(SizeLaw(l), rb, rs);
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
    return f;
}

TraceReplayPeak TraceProjector::replay(const Factors& f) const
{
    const auto& laws = m_laws.laws();
    double c = 0, lo = 0, hi = 0;
    auto sizes = [&](uint32_t i, double& zc, double& zl, double& zh) {
        const AllocationLaw& law = laws[i];
        const double z = double(m_size[i]);
        zc = allocatorSize(z, f.law[size_t(law.central)]);
        zl = allocatorSize(z, f.low[law.allowed]);
        zh = allocatorSize(z, f.high[law.allowed]);
    };
    for (uint32_t i : m_initial) {
        double zc, zl, zh;
        sizes(i, zc, zl, zh);
        c += zc, lo += zl, hi += zh;
    }
    TraceReplayPeak p{c, lo, hi, -1, -1, -1};
    for (size_t k = 0; k < m_boundaries.size(); ++k) {
        const Boundary& bd = m_boundaries[k];
        double zc, zl, zh;
        sizes(bd.alloc, zc, zl, zh);
        const double sign = bd.end ? -1 : 1;
        c += sign * zc, lo += sign * zl, hi += sign * zh;
        if (k + 1 < m_boundaries.size() && m_boundaries[k + 1].event == bd.event)
            continue; // the event's other boundaries first
        if (c > p.central) p.central = c, p.centralEvent = bd.event;
        if (lo > p.low) p.low = lo, p.lowEvent = bd.event;
        if (hi > p.high) p.high = hi, p.highEvent = bd.event;
    }
    return p;
}

void TraceProjector::visit(double b, double s,
                           const std::function<void(int64_t event, uint32_t alloc, bool end, double bytes)>& f) const
{
    const Factors fs = factors(b, s);
    const auto& laws = m_laws.laws();
    auto bytes = [&](uint32_t i) { return double(m_size[i]) * fs.law[size_t(laws[i].central)]; };
    for (uint32_t i : m_initial)
        f(-1, i, false, bytes(i));
    for (const Boundary& bd : m_boundaries)
        f(bd.event, bd.alloc, bd.end, bytes(bd.alloc));
}

TraceReplayPeak TraceProjector::project(double b, double s) const { return replay(factors(b, s)); }

std::vector<AmbiguityWorth> TraceProjector::worth(double b, double s, size_t count, const TraceReplayPeak* at) const
{
    // What each group holds at the central peak, read its other ways: the peak moves at least
    // that much (more where the group's own peak is elsewhere).
    const Factors f = factors(b, s);
    const TraceReplayPeak p = at ? *at : replay(f);
    const auto& laws = m_laws.laws();
    std::vector<double> live(m_laws.ambiguities().size() + 1, 0.0);
    for (uint32_t i : m_initial)
        live[laws[i].group] += double(m_size[i]);
    for (const Boundary& bd : m_boundaries) {
        if (bd.event > p.centralEvent)
            break;
        live[laws[bd.alloc].group] += (bd.end ? -1.0 : 1.0) * double(m_size[bd.alloc]);
    }
    std::vector<AmbiguityWorth> out;
    for (size_t g = 0; g < m_laws.ambiguities().size(); ++g) {
        const LawAmbiguity& a = m_laws.ambiguities()[g];
        const double up = live[g + 1] * (f.high[a.allowed] - f.law[size_t(a.central)]);
        const double down = live[g + 1] * (f.law[size_t(a.central)] - f.low[a.allowed]);
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
