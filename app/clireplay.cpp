// SPDX-License-Identifier: MIT
#include "app/clireplay.h"

#include "core/io/loader.h"
#include "core/replay/allocatorreplay.h"
#include "core/util/loaderror.h"
#include "core/util/units.h"

#include <cstdio>
#include <sstream>

namespace headroom::cli {

namespace {

nlohmann::json oomJson(const std::optional<AllocatorReplayResult::Oom>& o)
{
    if (!o)
        return nullptr;
    return {{"event", o->event},
            {"size_bytes", o->size},
            {"reserved_bytes", o->reserved},
            {"allocated_bytes", o->allocated},
            {"cached_free_bytes", o->cachedFree},
            {"largest_free_block_bytes", o->largestFree}};
}

nlohmann::json replayDeviceJson(const AllocatorReplayResult& r)
{
    nlohmann::json j = {{"device", r.device},
                        {"events", r.events},
                        {"requests", r.requests},
                        {"alloc_conf", r.config.text()},
                        {"initial_state_reconstructed", r.initialStateReconstructed},
                        {"followed_recording", r.followedRecording},
                        {"reserved_peak_bytes", r.reservedPeak},
                        {"reserved_peak_event", r.reservedPeakEvent},
                        {"recorded_reserved_peak_bytes", r.recordedReservedPeak},
                        {"capacity_bytes", r.capacity > 0 ? nlohmann::json(r.capacity) : nlohmann::json(nullptr)},
                        {"capacity_source", r.capacitySource},
                        {"recorded_oom_event", r.recordedOomEvent >= 0 ? nlohmann::json(r.recordedOomEvent) : nullptr},
                        {"unmatched_frees", r.unmatchedFrees}};
    return j;
}

std::string share(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
    return buf;
}

nlohmann::json resultsJson(const Snapshot& snap, const std::vector<AllocatorReplayResult>& results, bool recorded)
{
    nlohmann::json devices = nlohmann::json::array();
    for (const AllocatorReplayResult& r : results) {
        nlohmann::json d = replayDeviceJson(r);
        if (recorded) {
            d["segment_events_recorded"] = r.segmentEventsRecorded;
            d["segment_events_simulated"] = r.segmentEventsSimulated;
            d["segment_events_matched"] = r.segmentEventsMatched;
            d["max_reserved_difference_bytes"] = r.maxReservedDifference;
            d["max_reserved_difference_event"] = r.maxReservedDifferenceEvent;
            d["placement_divergences"] = r.placementDivergences;
            d["first_divergence"] = r.firstDivergence ? nlohmann::json{{"event", r.firstDivergence->event},
                                                                       {"recorded", r.firstDivergence->recorded},
                                                                       {"simulated", r.firstDivergence->simulated},
                                                                       {"why", r.firstDivergence->why}}
                                                      : nlohmann::json(nullptr);
        } else {
            d["oom_avoided"] = r.oomAvoided ? nlohmann::json(*r.oomAvoided) : nlohmann::json(nullptr);
            d["at_recorded_oom"] = oomJson(r.atRecordedOom);
            d["first_simulated_oom"] = oomJson(r.firstSimulatedOom);
        }
        devices.push_back(std::move(d));
    }
    return {{"file", snap.path},
            {"format", snap.format},
            {"recorded_setting", recorded},
            {"recorded_alloc_conf", AllocatorConfig::fromSnapshot(snap.allocatorSettings).text()},
            {"setting_from_file", results.front().settingFromFile},
            {"devices", std::move(devices)}};
}

std::string resultsText(const Snapshot& snap, const std::vector<AllocatorReplayResult>& results, bool recorded)
{
    std::ostringstream os;
    os << snap.path << " (" << snap.format << ")\n";
    for (const AllocatorReplayResult& r : results) {
        const std::string conf = r.config.text().empty() ? "defaults" : r.config.text();
        os << "\ndevice " << r.device << ": " << r.requests << " requests of " << r.events << " events under " << conf
           << (recorded ? (r.settingFromFile ? " (recorded)" : " (no allocator_settings: defaults)") : "")
           << (r.initialStateReconstructed ? "; memory from before the window reconstructed" : "") << "\n";
        if (recorded && !r.checkedAgainstRecording()) {
            // A CPU recording, or history without segment events: nothing to check the
            // simulation against, and its reserved curve is the simulation's alone.
            os << "  no segment events recorded to check against; simulated reserved peak "
               << formatBytes(r.reservedPeak) << " (at event " << r.reservedPeakEvent << ")\n";
            continue;
        }
        if (recorded) {
            os << "  segment events: " << r.segmentEventsMatched << " of " << r.segmentEventsRecorded
               << " recorded reproduced (" << share(r.segmentMatchShare()) << "), " << r.segmentEventsSimulated
               << " simulated\n"
               << "  reserved: largest difference " << formatBytes(r.maxReservedDifference) << " ("
               << share(r.reservedDifferenceShare()) << " of the recorded peak " << formatBytes(r.recordedReservedPeak)
               << ")"
               << (r.maxReservedDifferenceEvent >= 0 ? " at event " + std::to_string(r.maxReservedDifferenceEvent)
                                                     : std::string())
               << "\n";
            if (r.placementDivergences)
                os << "  " << r.placementDivergences << " allocations placed elsewhere than recorded\n";
            if (r.firstDivergence)
                os << "  first divergence at event " << r.firstDivergence->event
                   << ":\n    recorded:  " << r.firstDivergence->recorded
                   << "\n    simulated: " << r.firstDivergence->simulated << "\n    why: " << r.firstDivergence->why
                   << "\n";
            else
                os << "  no divergence\n";
            continue;
        }
        os << "  reserved peak " << formatBytes(r.reservedPeak) << " (recorded " << formatBytes(r.recordedReservedPeak)
           << ")";
        if (r.capacity > 0)
            os << " against a capacity of " << formatBytes(r.capacity) << " (" << r.capacitySource << ")";
        os << "\n";
        if (r.oomAvoided)
            os << "  the recorded OOM at event " << r.recordedOomEvent << " (" << formatBytes(r.recordedOomSize)
               << "): " << (*r.oomAvoided ? "avoided" : "not avoided") << "\n";
        if (r.atRecordedOom)
            os << "  at that request: reserved " << formatBytes(r.atRecordedOom->reserved) << ", cached free "
               << formatBytes(r.atRecordedOom->cachedFree) << ", largest free block "
               << formatBytes(r.atRecordedOom->largestFree) << "\n";
        if (r.firstSimulatedOom)
            os << "  first simulated OOM at event " << r.firstSimulatedOom->event << ": "
               << formatBytes(r.firstSimulatedOom->size) << " with " << formatBytes(r.firstSimulatedOom->reserved)
               << " reserved, " << formatBytes(r.firstSimulatedOom->cachedFree) << " cached free, largest free block "
               << formatBytes(r.firstSimulatedOom->largestFree) << "\n";
        else if (r.capacity > 0)
            os << "  no simulated OOM\n";
    }
    return os.str();
}

} // namespace

void ReplayCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("replay", "Replay the allocations through a simulation of PyTorch's caching allocator: "
                                         "check it against the recording, or try another PYTORCH_CUDA_ALLOC_CONF");
    m_cmd->add_option("FILE", m_req.file, "Snapshot with a trace")->required();
    m_cmd->add_option("--alloc-conf", m_allocConf,
                      "Replay under this setting instead of the recorded one, e.g. "
                      "expandable_segments:True,max_split_size_mb:512");
    m_cmd->add_option("--capacity", m_req.capacity,
                      "Device memory the allocator may reserve (e.g. 80GiB); default: from the OOM record");
    m_cmd->add_option("--device", m_req.device, "Only this device");
    m_cmd->add_flag("--json", m_json, "Machine-readable JSON output");
}

CommandOutput runReplay(const ReplayRequest& req, const TraceSource& source)
{
    AllocatorReplayOptions options;
    if (req.allocConf) {
        std::string error;
        auto conf = AllocatorConfig::parse(*req.allocConf, &error);
        if (!conf)
            throw CommandError("--alloc-conf: " + error);
        options.config = *conf;
    }
    if (!req.capacity.empty()) {
        const auto c = parseByteSize(req.capacity);
        if (!c || *c <= 0)
            throw CommandError("--capacity: expected a size such as 80GiB, 24GB or 1073741824, got '" + req.capacity +
                               "'");
        options.capacity = *c;
    }
    const std::shared_ptr<const LoadedTrace> trace = source(req.file);
    const Snapshot& snap = trace->snapshot;
    std::vector<AllocatorReplayResult> results;
    for (const DeviceData& dev : snap.devices) {
        if (req.device >= 0 && dev.device != req.device)
            continue;
        // Only snapshot traces carry the allocator's requests (not Chrome traces or timelines).
        if (dev.trace.count() == 0 || dev.sourceFormat.find("snapshot") == std::string::npos)
            continue;
        const MemoryTimeline* tl = trace->timelineFor(dev.device);
        if (!tl)
            continue;
        results.push_back(replayAllocator(snap, dev, *tl, options));
    }
    if (results.empty())
        throw CommandError(req.file + ": no device with an allocator trace to replay" +
                           (req.device >= 0 ? " (--device " + std::to_string(req.device) + ")" : std::string()));
    const bool recorded = !options.config;
    CommandOutput out;
    out.json = resultsJson(snap, results, recorded);
    out.text = resultsText(snap, results, recorded);
    return out;
}

int ReplayCommand::run()
{
    if (m_cmd->count("--alloc-conf"))
        m_req.allocConf = m_allocConf;
    return runAndEmit([&] { return runReplay(m_req, directSource()); }, m_json);
}

} // namespace headroom::cli
