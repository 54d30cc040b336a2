// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/calibrationpoints.h"

#include "core/replay/allocatorconstants.h"

#include <algorithm>
#include <map>

namespace headroom {

bool isActivationCategory(TensorCategory c) { return c == TensorCategory::Activation || c == TensorCategory::AutogradDetail; }

bool isTemporaryCategory(TensorCategory c)
{
    return c == TensorCategory::Temporary || c == TensorCategory::Input || c == TensorCategory::Unknown;
}

bool batchShaped(int64_t sz, int64_t tokens)
{
    constexpr int64_t kTiny = 1 << 20;
    return sz >= kTiny || (tokens > 0 && sz > allocator::kMinBlock && sz >= 4 * tokens && sz % tokens == 0);
}

double LivePoint::bytes(TensorCategory c) const
{
    auto f = byCat.find(c);
    return f == byCat.end() ? 0.0 : double(f->second);
}

double LivePoint::bytesByRule(const DeviceAnalysis& a, CategoryRule r) const
{
    double sum = 0;
    for (size_t i = 0; i < allocs.size(); ++i)
        if (a.classes[index[i]].rule == r)
            sum += double(allocs[i].second);
    return sum;
}

LivePoint livePointAt(const MemoryTimeline& tl, const DeviceAnalysis& a, int64_t e)
{
    LivePoint l;
    for (size_t i : a.liveAt(tl, e)) {
        const TensorCategory c = a.classes[i].category;
        l.byCat[c] += tl.allocations[i].size;
        l.allocs.push_back({c, tl.allocations[i].size});
        l.stacks.push_back(tl.allocations[i].stack);
        l.index.push_back(uint32_t(i));
        l.rules.push_back(a.classes[i].rule);
    }
    return l;
}

SteadyIteration chooseSteadyIteration(const DeviceAnalysis& a)
{
    const auto& phase = a.phases.eventPhase;
    const auto& its = a.iterationPeaks;
    std::vector<SteadyIteration> cands;
    for (size_t i = 0; i < its.size(); ++i) {
        SteadyIteration c{i};
        for (int64_t e = its[i].startEvent; e <= its[i].endEvent && e < int64_t(phase.size()); ++e) {
            c.optimizer |= phase[size_t(e)] == Phase::Optimizer;
            c.backward |= phase[size_t(e)] == Phase::Backward;
        }
        cands.push_back(c);
    }
    const bool anyOptimizer = std::any_of(cands.begin(), cands.end(), [](const auto& x) { return x.optimizer; });
    std::vector<SteadyIteration> steady;
    for (const auto& c : cands)
        if ((c.index > 0 || cands.size() == 1) && (c.optimizer || !anyOptimizer))
            steady.push_back(c);
    if (steady.empty())
        steady = cands;
    bool outlier = false;
    if (steady.size() >= 3) {
        std::vector<int64_t> peaks;
        for (const auto& c : steady)
            peaks.push_back(its[c.index].peakBytes);
        std::nth_element(peaks.begin(), peaks.begin() + peaks.size() / 2, peaks.end());
        const double median = double(peaks[peaks.size() / 2]);
        std::vector<SteadyIteration> kept;
        for (const auto& c : steady)
            if (double(its[c.index].peakBytes) <= 1.2 * median)
                kept.push_back(c);
            else
                outlier = true;
        steady = kept;
    }
    SteadyIteration chosen = *std::max_element(steady.begin(), steady.end(), [&](const auto& x, const auto& y) {
        return its[x.index].peakBytes < its[y.index].peakBytes;
    });
    chosen.outlierBatch = outlier;
    return chosen;
}

namespace {

/// The highest point outside the optimizer step, the last backward event and the highest
/// point of the optimizer step, with the backward passes counted.
MeasuredPoints highestPoints(const MemoryTimeline& tl, const std::vector<Phase>& phase, const IterationPeak& it)
{
    MeasuredPoints m;
    Phase prev = Phase::Other;
    for (int64_t e = it.startEvent; e <= it.endEvent && e < int64_t(phase.size()); ++e) {
        const Phase p = phase[size_t(e)];
        const int64_t bytes = tl.allocated[size_t(e)];
        if (p == Phase::Optimizer) {
            if (m.optimizer < 0 || bytes > tl.allocated[size_t(m.optimizer)])
                m.optimizer = e;
        } else if (m.startOfBackward < 0 || bytes > tl.allocated[size_t(m.startOfBackward)]) {
            m.startOfBackward = e;
        }
        if (p == Phase::Backward) {
            m.endOfBackward = e;
            if (prev != Phase::Backward)
                ++m.backwardSpans;
        }
        if (p != Phase::Other)
            prev = p;
    }
    if (m.startOfBackward < 0)
        m.startOfBackward = it.peakEvent >= 0 ? it.peakEvent : it.startEvent;
    return m;
}

} // namespace

MeasuredPoints measuredPoints(const MemoryTimeline& tl, const DeviceAnalysis& a, const IterationPeak& it,
                              int64_t forcedStart)
{
    const auto& phase = a.phases.eventPhase;
    MeasuredPoints m = highestPoints(tl, phase, it);
    int64_t& e1 = m.startOfBackward;
    // The activations are read where they all live. The highest point outside the optimizer
    // step usually sits at the start of the backward, but where gradients outgrow the
    // activations they replace (a large model at a small batch) it lies late in the backward,
    // after most activations were freed: reading them there scales a fraction of them. Then
    // the start of backward is read at the forward/backward boundary, and the late point is
    // kept as a second reading of the same phase: the projection takes the higher of the two
    // (at the measured configuration, the late point: the trace's own peak).
    // A point that freed fewer activations than that (a small convnet peaks a third of the way
    // into its backward, its last blocks' gradients allocated and their activations freed)
    // stays the first reading, and the boundary becomes the second: at the boundary every
    // activation is alive, and where a lever keeps the gradients alive through the forward
    // (accumulation) or grows the activations more than the gradients (the batch), the
    // boundary is the higher point of the step.
    if (forcedStart >= 0) {
        e1 = forcedStart;
        return m;
    }
    if (size_t(e1) >= phase.size() || phase[size_t(e1)] != Phase::Backward)
        return m;
    int64_t boundary = -1;
    for (int64_t e = it.startEvent + 1; e <= e1; ++e)
        if (phase[size_t(e)] == Phase::Backward && phase[size_t(e - 1)] != Phase::Backward &&
            phase[size_t(e - 1)] != Phase::Optimizer &&
            (boundary < 0 || tl.allocated[size_t(e - 1)] > tl.allocated[size_t(boundary)]))
            boundary = e - 1;
    if (boundary < 0)
        return m;
    auto activations = [&](int64_t e) {
        int64_t bytes = 0;
        for (size_t i : a.liveAt(tl, e))
            if (isActivationCategory(a.classes[i].category))
                bytes += tl.allocations[i].size;
        return bytes;
    };
    const int64_t atPoint = activations(e1), atBoundary = activations(boundary);
    if (2 * atPoint < atBoundary) {
        m.latePoint = e1;
        e1 = boundary;
    } else if (atPoint < atBoundary) {
        m.boundaryPoint = boundary;
    }
    return m;
}

namespace {

/// b*s: the most common activation size that is a multiple of h elements of 2 or 4 bytes with
/// at least 64 tokens (fewer is a per-token statistic); 0 when none is.
int64_t tokensFromSizes(const std::vector<std::pair<int, int64_t>>& bySize, const ModelDims& dims)
{
    for (auto [n, sz] : bySize)
        for (int e : {2, 4})
            if (sz % (int64_t(dims.hidden) * e) == 0 && sz / (int64_t(dims.hidden) * e) >= 64)
                return sz / (int64_t(dims.hidden) * e);
    return 0;
}

} // namespace

std::optional<SizeReading> readBatchFromSizes(const std::vector<std::pair<TensorCategory, int64_t>>& allocs,
                                              const ModelDims& dims, std::optional<int> knownS,
                                              std::optional<int> knownB)
{
    std::map<int64_t, int> counts;
    for (const auto& [c, sz] : allocs)
        if (isActivationCategory(c))
            ++counts[sz];
    std::vector<std::pair<int, int64_t>> bySize;
    for (auto [sz, n] : counts)
        bySize.push_back({n, sz});
    std::sort(bySize.rbegin(), bySize.rend());
    const int64_t bs = tokensFromSizes(bySize, dims);
    if (bs <= 0)
        return std::nullopt;
    int64_t bestB = 0, bestS = 0;
    int bestN = 0;
    for (auto [n, sz] : bySize)
        for (int e : {2, 4, 1}) {
            // A small multiple of b*s*h is a linear activation (MLP inner, QKV), not scores.
            if (sz % (bs * dims.hidden) == 0 && sz / (bs * dims.hidden) <= 16)
                break;
            if (sz % (int64_t(dims.heads) * e))
                continue;
            const int64_t q = sz / (int64_t(dims.heads) * e);
            if (q % bs)
                continue;
            const int64_t sq = q / bs;
            if (sq >= 64 && bs % sq == 0 && n > bestN && (!knownS || *knownS == sq)) {
                bestN = n;
                bestS = sq;
                bestB = bs / sq;
            }
        }
    if (!bestS && knownS && bs % *knownS == 0) { bestS = *knownS; bestB = bs / *knownS; }
    if (!bestS && knownB && bs % *knownB == 0) { bestB = *knownB; bestS = bs / *knownB; }
    if (bestB <= 0 || bestS <= 0)
        return std::nullopt;
    return SizeReading{int(bestB), int(bestS),
                       "tensor sizes: activations of b*s*h = " + std::to_string(bs) + "*" + std::to_string(dims.hidden) +
                           " elements" + (bestN ? ", attention scores of b*a*s^2" : "")};
}

} // namespace headroom
