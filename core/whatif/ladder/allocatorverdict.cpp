// SPDX-License-Identifier: MIT
#include "core/whatif/ladder/allocatorverdict.h"

#include "core/replay/allocatorreplay.h"
#include "core/util/join.h"
#include "core/util/units.h"

namespace headroom {

namespace {

/// Settings to try, cheapest to adopt first; those the run already had are skipped.
const char* const kCandidates[] = {"expandable_segments:True", "max_split_size_mb:512", "max_split_size_mb:128"};

} // namespace

std::optional<AllocatorVerdict> AllocatorVerdict::forOom(const LoadedTrace& trace, size_t deviceIndex, int64_t capacity)
{
    const DeviceData& dev = trace.snapshot.devices[deviceIndex];
    if (dev.ooms.empty())
        return std::nullopt;
    const MemoryTimeline& tl = trace.timelines[deviceIndex];
    AllocatorVerdict v;
    const AllocatorReplayResult recorded = replayAllocator(trace.snapshot, dev, tl);
    v.recordedMatch = recorded.segmentMatchShare();
    v.recordedReservedPeak = recorded.recordedReservedPeak;
    v.capacity = capacity > 0 ? capacity : recorded.capacity;
    v.trusted = recorded.segmentMatchShare() >= 0.99 && recorded.reservedDifferenceShare() <= 0.01 &&
                recorded.recordedOomEvent >= 0;
    if (!v.trusted)
        return v;
    for (const char* conf : kCandidates) {
        AllocatorReplayOptions o;
        o.capacity = capacity;
        o.config = AllocatorConfig::parse(conf);
        if (!o.config)
            continue;
        if (o.config->expandableSegments && recorded.config.expandableSegments)
            continue; // already on
        const AllocatorReplayResult r = replayAllocator(trace.snapshot, dev, tl, o);
        v.tried.push_back(conf);
        if (r.oomAvoided && *r.oomAvoided) {
            v.avoidedBy = conf;
            v.reservedPeak = r.reservedPeak;
            break;
        }
    }
    return v;
}

std::string AllocatorVerdict::evidence() const
{
    if (!trusted)
        return "the allocator replay reproduces only " + std::to_string(int(recordedMatch * 100)) +
               "% of the recorded segment events, so it does not judge other settings";
    if (avoidedBy.empty())
        return tried.empty() ? std::string()
                             : "replayed through the caching allocator under " + joinWith(tried) +
                                   ", the OOM still happens: no allocator setting saves this run";
    return "replayed through the caching allocator under " + avoidedBy + ", the OOM is avoided (reserved peak " +
           formatBytes(reservedPeak) + " of " + formatBytes(capacity) + ")";
}

std::optional<AllocatorRungInput> AllocatorVerdict::ladderInput() const
{
    if (!trusted)
        return std::nullopt;
    return AllocatorRungInput{avoidedBy, !avoidedBy.empty(), reservedPeak, capacity, evidence()};
}

} // namespace headroom
