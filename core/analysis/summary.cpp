// SPDX-License-Identifier: MIT
#include "core/analysis/summary.h"
#include "core/analysis/privatepools.h"

#include "core/util/units.h"

#include <algorithm>
#include <optional>
#include <sstream>

namespace headroom {

namespace {

/// Last minus first time over the entries that have one (found by fuzzing: an entry without
/// time_us holds kNoTime = INT64_MIN, and last - first overflowed).
std::optional<int64_t> traceDurationUs(const TraceEvents& trace)
{
    const auto& ts = trace.timeUs;
    auto has = [](int64_t t) { return t != TraceEvents::kNoTime; };
    auto first = std::find_if(ts.begin(), ts.end(), has);
    if (!trace.anyTime || first == ts.end())
        return std::nullopt;
    return *std::find_if(ts.rbegin(), ts.rend(), has) - *first;
}

} // namespace

nlohmann::json oomRecordsJson(const Snapshot& snap, const DeviceData& dev)
{
    nlohmann::json out = nlohmann::json::array();
    for (const OomEvent& o : dev.ooms)
        out.push_back({{"event_index", o.eventIndex},
                       {"size", o.size},
                       {"device_free", o.deviceFree},
                       {"frames", snap.frames.topFrameLines(dev.oomStack(o), kOomFrameLines)}});
    return out;
}

nlohmann::json privatePoolsJson(const DeviceData& device, const MemoryTimeline& timeline)
{
    nlohmann::json pools = nlohmann::json::array();
    for (const PrivatePoolSummary& p : privatePoolSummaries(device, timeline))
        pools.push_back({{"pool_id", {p.id.first, p.id.second}},
                         {"segments", p.segments},
                         {"reserved_bytes", p.reserved},
                         {"allocated_bytes", p.allocated},
                         {"peak_live_bytes", p.peakLive}});
    return pools;
}

nlohmann::json summaryJson(const LoadedTrace& trace)
{
    const Snapshot& snap = trace.snapshot;
    nlohmann::json devices = nlohmann::json::array();
    for (size_t i = 0; i < snap.devices.size(); ++i) {
        const DeviceData& dev = snap.devices[i];
        const MemoryTimeline& tl = trace.timelines[i];
        const FinalTotals t = finalTotals(dev);
        nlohmann::json d;
        d["device"] = dev.device;
        d["device_type"] = dev.deviceType;
        d["source_format"] = dev.sourceFormat;
        if (dev.rank >= 0)
            d["rank"] = dev.rank;
        if (dev.relativeCurve)
            d["allocated_curve"] = "relative to the start of the window";
        if (!dev.trace.category.empty())
            d["exact_categories"] = true;
        d["segments"] = dev.segments.size();
        d["reserved_bytes"] = t.reserved;
        d["allocated_bytes"] = t.allocated;
        d["active_bytes"] = t.active;
        d["requested_bytes"] = t.requested;
        d["trace_entries"] = dev.trace.count();
        nlohmann::json actions = nlohmann::json::object();
        for (const auto& [name, count] : dev.actionCounts)
            actions[name] = count;
        d["actions"] = actions;
        d["peak_allocated_bytes"] = tl.peakAllocated;
        d["peak_event_index"] = tl.peakEventIndex;
        d["oom"] = oomRecordsJson(snap, dev);
        d["reserved_curve_start"] = tl.initialReserved;
        d["reserved_peak_bytes"] = tl.peakReserved;
        d["reserved_recorded"] = tl.reservedRecorded;
        d["initial_allocated_bytes"] = tl.initialAllocated;
        d["allocations_before_window"] = tl.initialAllocationCount;
        d["pending_frees"] = tl.pendingFreeCount;
        d["private_pools"] = privatePoolsJson(dev, tl);
        d["has_time"] = dev.trace.anyTime;
        if (const auto duration = traceDurationUs(dev.trace))
            d["duration_us"] = *duration;
        devices.push_back(std::move(d));
    }
    nlohmann::json out;
    out["file"] = snap.path;
    out["format"] = snap.format;
    out["schema"] = snap.schemaEra;
    out["devices"] = devices;
    out["annotations"] = snap.annotations.size();
    out["distinct_frames"] = snap.frames.frameCount();
    out["distinct_stacks"] = snap.frames.stackCount();
    out["notes"] = snap.notes;
    if (!snap.timeWindows.empty())
        out["time_windows"] = snap.timeWindows.size();
    return out;
}

std::string summaryText(const LoadedTrace& trace)
{
    const Snapshot& snap = trace.snapshot;
    std::ostringstream os;
    os << snap.path << "\n";
    os << "  format: " << snap.format << "; schema: " << snap.schemaEra << "\n";
    os << "  frames: " << snap.frames.frameCount() << " distinct, stacks: " << snap.frames.stackCount()
       << " distinct, annotations: " << snap.annotations.size() << "\n";
    if (snap.devices.empty())
        os << "  no device owns a segment or has trace entries\n";
    for (size_t i = 0; i < snap.devices.size(); ++i) {
        const DeviceData& dev = snap.devices[i];
        const MemoryTimeline& tl = trace.timelines[i];
        const FinalTotals t = finalTotals(dev);
        os << "\nDevice " << dev.device << " (" << dev.deviceType;
        if (!dev.sourceFormat.empty())
            os << ", " << dev.sourceFormat;
        if (dev.rank >= 0)
            os << ", rank " << dev.rank;
        os << ")\n";
        if (tl.reservedRecorded) {
            os << "  segments:        " << dev.segments.size() << "\n";
            os << "  reserved:        " << formatBytes(t.reserved) << "\n";
            os << "  allocated:       " << formatBytes(t.allocated) << " (requested " << formatBytes(t.requested)
               << ", active " << formatBytes(t.active) << ")\n";
        } else {
            os << "  segments:        not recorded (a CPU recording)\n";
        }
        os << "  trace entries:   " << dev.trace.count();
        if (const auto duration = traceDurationUs(dev.trace); duration && dev.trace.count() > 1)
            os << " over " << formatDurationUs(*duration);
        os << "\n";
        if (!dev.actionCounts.empty()) {
            os << "  actions:        ";
            for (const auto& [name, count] : dev.actionCounts)
                os << " " << name << "=" << count;
            os << "\n";
        }
        os << "  peak allocated:  " << formatBytes(tl.peakAllocated);
        if (dev.relativeCurve)
            os << " (relative to the start of the window)";
        if (tl.peakEventIndex >= 0)
            os << " at event " << tl.peakEventIndex;
        else if (dev.trace.count() > 0)
            os << " (before the first event)";
        os << "\n";
        if (tl.reservedRecorded)
            os << "  peak reserved:   " << formatBytes(tl.peakReserved) << "\n";
        else
            os << "  peak reserved:   not recorded (a CPU recording: no caching allocator; `replay` simulates one)\n";
        for (const PrivatePoolSummary& p : privatePoolSummaries(dev, tl))
            os << "  private pool (" << p.id.first << ", " << p.id.second << "): " << p.segments
               << (p.segments == 1 ? " segment, reserved " : " segments, reserved ") << formatBytes(p.reserved)
               << ", allocated " << formatBytes(p.allocated) << " at the end; live peak " << formatBytes(p.peakLive)
               << "\n";
        for (const OomEvent& o : dev.ooms)
            os << "  OUT OF MEMORY at event " << o.eventIndex << ": requested " << formatBytes(o.size)
               << ", device free " << formatBytes(o.deviceFree) << "\n";
    }
    if (!snap.notes.empty()) {
        os << "\nNotes:\n";
        for (const auto& n : snap.notes)
            os << "  - " << n << "\n";
    }
    return os.str();
}

int primaryDeviceIndex(const LoadedTrace& trace)
{
    const auto& devices = trace.snapshot.devices;
    for (size_t i = 0; i < devices.size(); ++i)
        if (!devices[i].ooms.empty())
            return static_cast<int>(i);
    int best = -1;
    int64_t bestPeak = 0;
    for (size_t i = 0; i < devices.size() && i < trace.timelines.size(); ++i)
        if (trace.timelines[i].peakAllocated > bestPeak) {
            bestPeak = trace.timelines[i].peakAllocated;
            best = static_cast<int>(i);
        }
    if (best >= 0)
        return best;
    for (size_t i = 0; i < devices.size(); ++i)
        if (devices[i].trace.count() > 0)
            return static_cast<int>(i);
    return devices.empty() ? -1 : 0;
}

} // namespace headroom
