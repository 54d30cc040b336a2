// SPDX-License-Identifier: MIT
#include "core/whatif/replay/runlaws.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace headroom {

namespace {

constexpr int64_t kFitBytes = 4096;  // below, the allocator's 512-byte rounding hides the growth
constexpr double kTolerance = 0.2;   // how far a fitted exponent may be from a whole one

/// Per line of code: its allocations in order, and how many of each size.
struct Line {
    std::vector<uint32_t> allocs;
    std::map<int64_t, int64_t> sizes;
};

std::unordered_map<uint64_t, Line> linesOf(const TraceProjector& tp)
{
    std::unordered_map<uint64_t, Line> out;
    const AllocationLaws& laws = tp.laws();
    for (size_t i = 0; i < laws.count(); ++i) {
        const uint64_t line = laws.lineOf(i);
        if (!line)
            continue;
        Line& l = out[line];
        l.allocs.push_back(uint32_t(i));
        ++l.sizes[tp.sizes()[i]];
    }
    return out;
}

/// The whole exponent nearest `e`, or -1 when none is within the tolerance.
int wholeExponent(double e)
{
    const double n = std::round(e);
    return std::abs(e - n) <= kTolerance && n >= 0 && n <= 2 ? int(n) : -1;
}

/// A line that made as many allocations in both runs: the k-th of one is the k-th of the other
/// (one einsum's copies of q and k and its scores are one size at h*s = d, three sizes after).
void fitInOrder(const Line& la, const Line& lb, const TraceProjector& a, const TraceProjector& b, double ratio,
                std::vector<int8_t>& out)
{
    for (size_t k = 0; k < la.allocs.size(); ++k) {
        const int64_t za = a.sizes()[la.allocs[k]], zb = b.sizes()[lb.allocs[k]];
        if (za < kFitBytes && zb < kFitBytes)
            continue;
        out[la.allocs[k]] = int8_t(wholeExponent(std::log(double(zb) / double(za)) / std::log(ratio)));
    }
}

/// Otherwise its distinct sizes in order, and the allocations per iteration of each (a loop
/// over the sequence makes more of its tensors, not larger ones).
void fitBySize(const Line& la, const Line& lb, const TraceProjector& a, const TraceProjector& b, double ratio,
               std::vector<int8_t>& out)
{
    if (lb.sizes.size() != la.sizes.size())
        return;
    const double itA = double(a.laws().iterations()), itB = double(b.laws().iterations());
    std::map<int64_t, int> bySize;
    auto sb = lb.sizes.begin();
    for (auto sa = la.sizes.begin(); sa != la.sizes.end(); ++sa, ++sb) {
        if (sa->first < kFitBytes && sb->first < kFitBytes)
            continue;
        const double countExp = std::log((double(sb->second) / itB) / (double(sa->second) / itA)) / std::log(ratio);
        bySize[sa->first] = wholeExponent(std::log(double(sb->first) / double(sa->first)) / std::log(ratio) + countExp);
    }
    for (uint32_t i : la.allocs)
        if (const auto it = bySize.find(a.sizes()[i]); it != bySize.end())
            out[i] = int8_t(it->second);
}

/// Per allocation of `a`, the exponent of the lever moved by `ratio` (-1: not measured).
std::vector<int8_t> fitLines(const TraceProjector& a, const TraceProjector& b, double ratio)
{
    std::vector<int8_t> out(a.sizes().size(), -1);
    const auto la = linesOf(a), lb = linesOf(b);
    for (const auto& [key, lineA] : la) {
        const auto it = lb.find(key);
        if (it == lb.end())
            continue;
        if (it->second.allocs.size() == lineA.allocs.size() && a.laws().iterations() == b.laws().iterations())
            fitInOrder(lineA, it->second, a, b, ratio, out);
        else
            fitBySize(lineA, it->second, a, b, ratio, out);
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
        for (size_t i = 0; i < laws.count(); ++i) {
            if (exps[i] < 0)
                continue;
            laws.settle(i, batch, exps[i]);
            matched.insert(laws.lineOf(i));
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
