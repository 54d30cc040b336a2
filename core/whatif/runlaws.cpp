// SPDX-License-Identifier: MIT
#include "core/whatif/runlaws.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

namespace headroom {

namespace {

constexpr int64_t kFitBytes = 4096;  // below, the allocator's 512-byte rounding hides the growth
constexpr double kTolerance = 0.2;   // how far a fitted exponent may be from a whole one

/// Per line of code: how many allocations of each size.
struct Line {
    std::map<int64_t, int64_t> sizes;
};

std::unordered_map<uint64_t, Line> linesOf(const TraceProjector& tp)
{
    std::unordered_map<uint64_t, Line> out;
    const auto& lines = tp.laws().lines();
    for (size_t i = 0; i < lines.size(); ++i) {
        if (!lines[i])
            continue;
        ++out[lines[i]].sizes[tp.sizes()[i]];
    }
    return out;
}

/// Exponents per (line, size of the first run) for one lever moved by `ratio`.
std::map<std::pair<uint64_t, int64_t>, int> fitLines(const TraceProjector& a, const TraceProjector& b, double ratio)
{
    std::map<std::pair<uint64_t, int64_t>, int> out;
    const auto la = linesOf(a), lb = linesOf(b);
    const double itA = double(a.laws().iterations()), itB = double(b.laws().iterations());
    for (const auto& [key, lineA] : la) {
        const auto it = lb.find(key);
        if (it == lb.end() || it->second.sizes.size() != lineA.sizes.size())
            continue;
        auto sb = it->second.sizes.begin();
        for (auto sa = lineA.sizes.begin(); sa != lineA.sizes.end(); ++sa, ++sb) {
            if (sa->first < kFitBytes && sb->first < kFitBytes)
                continue;
            // A loop over the sequence makes more of its tensors, not larger ones.
            const double countExp = std::log((double(sb->second) / itB) / (double(sa->second) / itA)) / std::log(ratio);
            const double e = std::log(double(sb->first) / double(sa->first)) / std::log(ratio) + countExp;
            const double n = std::round(e);
            if (std::abs(e - n) <= kTolerance && n >= 0 && n <= 2)
                out[{key, sa->first}] = int(n);
        }
    }
    return out;
}

} // namespace

RunLawsFit fitLawsAcrossRuns(const TraceProjector& first, const std::vector<const TraceProjector*>& others)
{
    RunLawsFit fit;
    AllocationLaws laws = first.laws();
    std::set<uint64_t> matched;
    for (size_t r = 0; r < others.size(); ++r) {
        const TraceProjector& o = *others[r];
        const std::string name = "run " + std::to_string(r + 2);
        const bool seq = o.measuredSeq() != first.measuredSeq(), batch = o.measuredMicroBatch() != first.measuredMicroBatch();
        if (seq == batch)
            continue; // the terms' fit says why it is left out
        const double ratio = seq ? double(o.measuredSeq()) / first.measuredSeq()
                                 : double(o.measuredMicroBatch()) / first.measuredMicroBatch();
        const auto exps = fitLines(first, o, ratio);
        int64_t settledHere = 0;
        for (size_t i = 0; i < laws.lines().size(); ++i) {
            const auto it = exps.find({laws.lines()[i], first.sizes()[i]});
            if (it == exps.end())
                continue;
            laws.settle(i, batch, it->second);
            matched.insert(laws.lines()[i]);
            ++settledHere;
        }
        fit.settled += settledHere;
        fit.notes.push_back(name + ": " + std::to_string(settledHere) + " allocations' growth with the " +
                            (seq ? "sequence" : "micro-batch") + " measured line by line");
    }
    fit.linesMatched = int64_t(matched.size());
    fit.projector = std::make_shared<const TraceProjector>(first, std::move(laws));
    return fit;
}

} // namespace headroom
