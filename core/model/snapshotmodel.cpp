// SPDX-License-Identifier: MIT
#include "core/model/snapshotmodel.h"

#include <algorithm>

namespace headroom {

const char* actionName(TraceAction a)
{
    switch (a) {
    case TraceAction::Alloc: return "alloc";
    case TraceAction::FreeRequested: return "free_requested";
    case TraceAction::FreeCompleted: return "free_completed";
    case TraceAction::SegmentAlloc: return "segment_alloc";
    case TraceAction::SegmentFree: return "segment_free";
    case TraceAction::SegmentMap: return "segment_map";
    case TraceAction::SegmentUnmap: return "segment_unmap";
    case TraceAction::Snapshot: return "snapshot";
    case TraceAction::Oom: return "oom";
    case TraceAction::Annotate: return "annotate";
    case TraceAction::Free: return "free";
    case TraceAction::Other: return "other";
    }
    return "other";
}

TraceAction actionFromName(std::string_view n)
{
    if (n == "alloc") return TraceAction::Alloc;
    if (n == "free_requested") return TraceAction::FreeRequested;
    if (n == "free_completed") return TraceAction::FreeCompleted;
    if (n == "segment_alloc") return TraceAction::SegmentAlloc;
    if (n == "segment_free") return TraceAction::SegmentFree;
    if (n == "segment_map") return TraceAction::SegmentMap;
    if (n == "segment_unmap") return TraceAction::SegmentUnmap;
    if (n == "snapshot") return TraceAction::Snapshot;
    if (n == "oom") return TraceAction::Oom;
    if (n == "annotate") return TraceAction::Annotate;
    if (n == "free") return TraceAction::Free;
    return TraceAction::Other;
}

BlockState blockStateFromName(std::string_view s)
{
    if (s == "active_allocated")
        return BlockState::ActiveAllocated;
    if (s == "active_pending_free" || s == "active_awaiting_free")
        return BlockState::ActivePendingFree;
    if (s == "inactive")
        return BlockState::Inactive;
    return BlockState::Unknown;
}

void TraceEvents::compactStreams()
{
    if (stream.empty() || std::any_of(stream.begin(), stream.end(), [&](int64_t s) { return s != stream.front(); }))
        return;
    uniformStream = stream.front();
    std::vector<int64_t>().swap(stream);
}

std::vector<int64_t> TraceEvents::streams() const
{
    return stream.empty() ? std::vector<int64_t>(count(), uniformStream) : stream;
}

void TraceEvents::reserve(size_t n)
{
    action.reserve(n);
    addr.reserve(n);
    size.reserve(n);
    stream.reserve(n);
    timeUs.reserve(n);
    stack.reserve(n);
}

const char* timeWindowKindName(TimeWindowKind k)
{
    switch (k) {
    case TimeWindowKind::UserAnnotation: return "user_annotation";
    case TimeWindowKind::ProfilerStep: return "profiler_step";
    case TimeWindowKind::OptimizerStep: return "optimizer_step";
    case TimeWindowKind::ZeroGrad: return "zero_grad";
    case TimeWindowKind::Backward: return "backward";
    case TimeWindowKind::Other: return "other";
    }
    return "other";
}

void TraceEvents::clear()
{
    *this = TraceEvents{};
}

uint32_t DeviceData::oomStack(const OomEvent& o) const
{
    if (o.eventIndex < 0 || static_cast<size_t>(o.eventIndex) >= trace.stack.size())
        return FrameTable::kEmptyStack;
    return trace.stack[static_cast<size_t>(o.eventIndex)];
}

const DeviceData* Snapshot::findDevice(int device) const
{
    for (const auto& d : devices)
        if (d.device == device)
            return &d;
    return nullptr;
}

FinalTotals finalTotals(const DeviceData& dev)
{
    FinalTotals t;
    for (const Segment& s : dev.segments)
        t.reserved += s.totalSize;
    for (const Block& b : dev.blocks) {
        if (b.state == BlockState::ActiveAllocated) {
            t.allocated += b.size;
            t.active += b.size;
            t.requested += b.requestedSize;
        } else if (b.state == BlockState::ActivePendingFree) {
            t.active += b.size;
        }
    }
    return t;
}

} // namespace headroom
