// SPDX-License-Identifier: MIT
#include "core/analysis/snapshotcompare.h"

#include <algorithm>
#include <map>
#include <utility>

namespace headroom {

namespace {

/// Signature -> count of the allocations alive at the side's peak.
std::map<std::pair<std::string, int64_t>, int64_t> signaturesAtPeak(const CompareSide& s)
{
    std::map<std::pair<std::string, int64_t>, int64_t> out;
    const MemoryTimeline& tl = s.trace->timelines[s.deviceIndex];
    const FrameTable& ft = s.trace->snapshot.frames;
    for (size_t i : s.analysis->liveAt(tl, tl.peakEventIndex)) {
        const Allocation& a = tl.allocations[i];
        // The innermost Python frame (the user's code); else the innermost non-noise one.
        std::string frame;
        for (uint32_t f : ft.stack(a.stack)) {
            if (ft.isNoiseFrame(f))
                continue;
            const std::string_view file = ft.strings().get(ft.frame(f).file);
            if (file.size() > 3 && file.substr(file.size() - 3) == ".py") {
                frame = ft.formatFrame(f);
                break;
            }
            if (frame.empty())
                frame = ft.formatFrame(f);
        }
        ++out[{std::move(frame), a.size}];
    }
    return out;
}

std::vector<IterationPair> alignIterations(const DeviceAnalysis& a, const DeviceAnalysis& b)
{
    std::vector<IterationPair> out(std::max(a.iterationPeaks.size(), b.iterationPeaks.size()));
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].iteration = int(i);
        if (i < a.iterationPeaks.size())
            out[i].peakA = a.iterationPeaks[i].peakBytes;
        if (i < b.iterationPeaks.size())
            out[i].peakB = b.iterationPeaks[i].peakBytes;
    }
    return out;
}

std::vector<ModuleDiff> moduleDiffs(const CompareSide& a, const CompareSide& b, size_t maxDifferences)
{
    auto modulesAtPeak = [](const CompareSide& s) {
        const MemoryTimeline& tl = s.trace->timelines[s.deviceIndex];
        return LiveGroups::at(*s.trace, s.deviceIndex, *s.analysis, tl.peakEventIndex, SIZE_MAX, 1).byModule;
    };
    std::map<std::string, ModuleDiff> by;
    for (const ModuleGroup& m : modulesAtPeak(a))
        by[m.forward].bytesA = m.bytes;
    for (const ModuleGroup& m : modulesAtPeak(b))
        by[m.forward].bytesB = m.bytes;
    std::vector<ModuleDiff> out;
    for (auto& [forward, d] : by)
        if (d.bytesDelta() != 0) {
            d.forward = forward;
            out.push_back(d);
        }
    std::stable_sort(out.begin(), out.end(), [](const ModuleDiff& x, const ModuleDiff& y) {
        return std::abs(x.bytesDelta()) > std::abs(y.bytesDelta());
    });
    if (out.size() > maxDifferences)
        out.resize(maxDifferences);
    return out;
}

std::vector<UserCategoryDiff> userCategoryDiffs(const CompareSide& a, const CompareSide& b, const UserCategories& rules)
{
    auto atPeak = [&](const CompareSide& s) {
        const MemoryTimeline& tl = s.trace->timelines[s.deviceIndex];
        return userCategoriesAt(*s.trace, s.deviceIndex, *s.analysis, tl.peakEventIndex, rules);
    };
    const UserCategoryTotals ga = atPeak(a), gb = atPeak(b);
    std::vector<UserCategoryDiff> out;
    for (size_t i = 0; i < rules.rules().size(); ++i)
        out.push_back({rules.rules()[i].name, ga.groups[i].bytes, gb.groups[i].bytes});
    out.push_back({"(no rule)", ga.unclaimedBytes, gb.unclaimedBytes});
    return out;
}

} // namespace

Comparison Comparison::compute(const CompareSide& a, const CompareSide& b, size_t maxDifferences,
                               const UserCategories* rules)
{
    Comparison c;
    const MemoryTimeline& ta = a.trace->timelines[a.deviceIndex];
    const MemoryTimeline& tb = b.trace->timelines[b.deviceIndex];
    c.peakA = ta.peakAllocated;
    c.peakB = tb.peakAllocated;
    c.reservedA = ta.peakReserved;
    c.reservedB = tb.peakReserved;
    c.reservedRecordedA = ta.reservedRecorded;
    c.reservedRecordedB = tb.reservedRecorded;
    c.iterationsA = a.analysis->phases.iterations.size();
    c.iterationsB = b.analysis->phases.iterations.size();
    c.oomsA = a.trace->snapshot.devices[a.deviceIndex].ooms.size();
    c.oomsB = b.trace->snapshot.devices[b.deviceIndex].ooms.size();
    c.categoriesA = a.analysis->atPeak.byCategory;
    c.categoriesB = b.analysis->atPeak.byCategory;
    c.phasesA = a.analysis->atPeak.byPhase;
    c.phasesB = b.analysis->atPeak.byPhase;
    c.iterations = alignIterations(*a.analysis, *b.analysis);
    c.modules = moduleDiffs(a, b, maxDifferences);
    if (rules)
        c.userCategories = userCategoryDiffs(a, b, *rules);

    const auto sa = signaturesAtPeak(a);
    const auto sb = signaturesAtPeak(b);
    auto ia = sa.begin();
    auto ib = sb.begin();
    while (ia != sa.end() || ib != sb.end()) {
        SignatureDiff d;
        if (ib == sb.end() || (ia != sa.end() && ia->first < ib->first)) {
            d = {ia->first.first, ia->first.second, ia->second, 0};
            ++ia;
        } else if (ia == sa.end() || ib->first < ia->first) {
            d = {ib->first.first, ib->first.second, 0, ib->second};
            ++ib;
        } else {
            d = {ia->first.first, ia->first.second, ia->second, ib->second};
            ++ia;
            ++ib;
        }
        if (d.countA == d.countB)
            continue;
        (d.countA > d.countB ? c.onlyInA : c.onlyInB) += std::abs(d.bytesDelta());
        c.differences.push_back(std::move(d));
    }
    std::stable_sort(c.differences.begin(), c.differences.end(), [](const SignatureDiff& x, const SignatureDiff& y) {
        return std::abs(x.bytesDelta()) > std::abs(y.bytesDelta());
    });
    if (c.differences.size() > maxDifferences)
        c.differences.resize(maxDifferences);
    return c;
}

} // namespace headroom
