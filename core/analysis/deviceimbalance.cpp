// SPDX-License-Identifier: MIT
#include "core/analysis/deviceimbalance.h"

#include <algorithm>
#include <unordered_map>

namespace headroom {

namespace {

constexpr double kMinRatio = 3.0;
constexpr double kMinShareOfPeak = 0.05;

/// The largest single allocation of each telling frame on one device.
std::unordered_map<uint32_t, int64_t> largestByLine(const FrameTable& ft, const DeviceData& dev)
{
    std::unordered_map<uint32_t, int64_t> out;
    std::unordered_map<uint32_t, uint32_t> frameOfStack;
    const TraceEvents& ev = dev.trace;
    for (size_t i = 0; i < ev.count(); ++i) {
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

} // namespace

std::optional<LineImbalance> findDeviceImbalance(const LoadedTrace& trace, size_t deviceIndex)
{
    const Snapshot& snap = trace.snapshot;
    if (snap.devices.size() < 2 || deviceIndex >= snap.devices.size())
        return std::nullopt;
    std::vector<std::unordered_map<uint32_t, int64_t>> lines;
    for (const DeviceData& dev : snap.devices)
        lines.push_back(largestByLine(snap.frames, dev));
    const int64_t peak = trace.timelines[deviceIndex].peakAllocated;
    std::optional<LineImbalance> best;
    for (const auto& [frame, bytes] : lines[deviceIndex]) {
        if (double(bytes) < kMinShareOfPeak * double(peak))
            continue;
        std::vector<int64_t> others;
        for (size_t d = 0; d < lines.size(); ++d)
            if (d != deviceIndex)
                if (auto it = lines[d].find(frame); it != lines[d].end())
                    others.push_back(it->second);
        if (others.empty())
            continue;
        const int64_t m = median(others);
        if (m <= 0 || double(bytes) < kMinRatio * double(m))
            continue;
        if (best && bytes - m <= best->bytes - best->median)
            continue;
        best = LineImbalance{frame, snap.devices[deviceIndex].device, bytes, m, double(bytes) / double(m), {}};
    }
    if (best)
        for (size_t d = 0; d < lines.size(); ++d)
            if (auto it = lines[d].find(best->frame); it != lines[d].end())
                best->perDevice.emplace_back(snap.devices[d].device, it->second);
    return best;
}

} // namespace headroom
