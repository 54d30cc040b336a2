// SPDX-License-Identifier: MIT
#include "core/analysis/deviceimbalance.h"

#include <algorithm>
#include <unordered_map>

namespace headroom {

namespace {

constexpr double kMinRatio = 3.0;
constexpr double kMinShareOfPeak = 0.05;

using Lines = std::unordered_map<uint32_t, int64_t>;

/// The largest single allocation of each telling frame in events [from, to).
Lines largestByLine(const FrameTable& ft, const TraceEvents& ev, size_t from, size_t to)
{
    Lines out;
    std::unordered_map<uint32_t, uint32_t> frameOfStack;
    for (size_t i = from; i < to && i < ev.count(); ++i) {
        if (ev.action[i] != TraceAction::Alloc || ev.stack[i] == FrameTable::kEmptyStack)
            continue;
        auto [it, fresh] = frameOfStack.try_emplace(ev.stack[i], 0);
        if (fresh) {
            const std::vector<uint32_t> top = ft.topFrames(ev.stack[i], 1);
            it->second = top.empty() ? UINT32_MAX : top.front();
        }
        if (it->second == UINT32_MAX)
            continue;
        int64_t& largest = out[it->second];
        largest = std::max(largest, ev.size[i]);
    }
    return out;
}

int64_t median(std::vector<int64_t> v)
{
    std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

/// The line of `lines[k]` furthest above the median of the other places' (3x, 5% of `peak`).
std::optional<LineImbalance> furthestAbove(const std::vector<Lines>& lines, const std::vector<int>& names, size_t k,
                                           int64_t peak)
{
    std::optional<LineImbalance> best;
    for (const auto& [frame, bytes] : lines[k]) {
        if (double(bytes) < kMinShareOfPeak * double(peak))
            continue;
        std::vector<int64_t> others;
        for (size_t d = 0; d < lines.size(); ++d)
            if (d != k)
                if (auto it = lines[d].find(frame); it != lines[d].end())
                    others.push_back(it->second);
        if (others.empty())
            continue;
        const int64_t m = median(others);
        if (m <= 0 || double(bytes) < kMinRatio * double(m))
            continue;
        if (best && bytes - m <= best->bytes - best->median)
            continue;
        best = LineImbalance{frame, names[k], bytes, m, double(bytes) / double(m), {}};
    }
    if (best)
        for (size_t d = 0; d < lines.size(); ++d)
            if (auto it = lines[d].find(best->frame); it != lines[d].end())
                best->perIndex.emplace_back(names[d], it->second);
    return best;
}

} // namespace

std::optional<LineImbalance> findDeviceImbalance(const LoadedTrace& trace, size_t deviceIndex)
{
    const Snapshot& snap = trace.snapshot;
    if (snap.devices.size() < 2 || deviceIndex >= snap.devices.size())
        return std::nullopt;
    std::vector<Lines> lines;
    std::vector<int> names;
    for (const DeviceData& dev : snap.devices) {
        lines.push_back(largestByLine(snap.frames, dev.trace, 0, dev.trace.count()));
        names.push_back(dev.device);
    }
    return furthestAbove(lines, names, deviceIndex, trace.timelines[deviceIndex].peakAllocated);
}

std::optional<LineImbalance> findIterationOutlierLine(const FrameTable& frames, const TraceEvents& events,
                                                      const std::vector<Iteration>& iterations, int iteration,
                                                      int64_t peak)
{
    if (iterations.size() < 2 || iteration < 0 || size_t(iteration) >= iterations.size())
        return std::nullopt;
    std::vector<Lines> lines;
    std::vector<int> names;
    for (const Iteration& it : iterations) {
        lines.push_back(largestByLine(frames, events, size_t(it.startEvent), size_t(it.endEvent) + 1));
        names.push_back(it.index);
    }
    return furthestAbove(lines, names, size_t(iteration), peak);
}

} // namespace headroom
