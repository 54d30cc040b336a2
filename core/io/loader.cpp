// SPDX-License-Identifier: MIT
#include "core/io/loader.h"
#include "core/model/runconfig.h"

#include "core/io/inputbuffer.h"
#include "core/io/jsonimport.h"
#include "core/io/snapshotimporter.h"
#include "core/native/nativeformat.h"
#include "core/util/loaderror.h"

#include <algorithm>

namespace headroom {

namespace {

/// Every reader stores sizes and times as int64 as the file gives them; the replay and the
/// analyses add them up. Refuse values no real trace has (found by fuzzing: a size near 2^62
/// in an .hrt overflowed the replay's running total), so every later sum fits in int64.
void checkRanges(const Snapshot& snap, const std::string& path)
{
    constexpr int64_t kMaxBytes = int64_t(1) << 50; // 1 PiB: no device comes near
    constexpr uint64_t kMaxTotal = uint64_t(1) << 62;
    constexpr int64_t kMaxTime = int64_t(1) << 60;  // microseconds: 36,000 years
    auto mag = [](int64_t v) { return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v); };
    auto bad = [&](const std::string& where, const char* what, int64_t v, const char* limit) {
        throw LoadError(path, LoadError::kNoOffset,
                        where + ": " + what + " " + (v == INT64_MAX ? std::string("of 2^63 or more") : v == INT64_MIN ? std::string("of -2^63 or less") : std::to_string(v)) + " is out of range (expected " + limit +
                            "); the file is corrupt");
    };
    for (const DeviceData& dev : snap.devices) {
        const std::string dn = "device " + std::to_string(dev.device);
        const TraceEvents& ev = dev.trace;
        if (int64_t(ev.count()) > Allocation::kMaxEvents)
            throw LoadError(path, LoadError::kNoOffset,
                            dn + ": " + std::to_string(ev.count()) + " trace entries (expected at most 2^31 - 1 per device)");
        uint64_t total = 0;
        auto bytes = [&](const std::string& where, const char* what, int64_t v) {
            if (mag(v) > uint64_t(kMaxBytes))
                bad(where, what, v, "at most 1 PiB");
            total += mag(v);
            if (total > kMaxTotal)
                bad(where, what, v, "the sizes to add up to less than 2^62 bytes");
        };
        // The per-event loops build the message only for the entry that fails: one string per
        // event cost more than the rest of reopening an .hrt (a heap allocation each).
        for (size_t i = 0; i < ev.size.size(); ++i) {
            const uint64_t m = mag(ev.size[i]);
            if (m > uint64_t(kMaxBytes) || total + m > kMaxTotal)
                bytes(dn + ", trace entry " + std::to_string(i), "size", ev.size[i]); // throws
            total += m;
        }
        for (size_t i = 0; i < ev.timeUs.size(); ++i)
            if (ev.timeUs[i] != TraceEvents::kNoTime && mag(ev.timeUs[i]) > uint64_t(kMaxTime))
                bad(dn + ", trace entry " + std::to_string(i), "time_us", ev.timeUs[i], "|t| < 2^60 us");
        for (const auto& [i, v] : ev.deviceFree)
            bytes(dn + ", trace entry " + std::to_string(i), "device_free", v);
        total = 0;
        for (size_t i = 0; i < ev.totalAllocated.size(); ++i)
            if (mag(ev.totalAllocated[i]) > uint64_t(kMaxBytes))
                bad(dn + ", trace entry " + std::to_string(i), "total allocated", ev.totalAllocated[i], "at most 1 PiB");
        for (size_t i = 0; i < ev.totalReserved.size(); ++i)
            if (mag(ev.totalReserved[i]) > uint64_t(kMaxBytes))
                bad(dn + ", trace entry " + std::to_string(i), "total reserved", ev.totalReserved[i], "at most 1 PiB");
        for (size_t i = 0; i < dev.segments.size(); ++i) {
            const Segment& sg = dev.segments[i];
            const std::string w = dn + ", segment " + std::to_string(i);
            bytes(w, "total_size", sg.totalSize);
            bytes(w, "allocated_size", sg.allocatedSize);
            bytes(w, "active_size", sg.activeSize);
            bytes(w, "requested_size", sg.requestedSize);
        }
        for (size_t i = 0; i < dev.blocks.size(); ++i) {
            const std::string w = dn + ", block " + std::to_string(i);
            bytes(w, "size", dev.blocks[i].size);
            bytes(w, "requested_size", dev.blocks[i].requestedSize);
        }
        total = 0;
        for (size_t i = 0; i < dev.ooms.size(); ++i) {
            bytes(dn + ", oom " + std::to_string(i), "size", dev.ooms[i].size);
            bytes(dn + ", oom " + std::to_string(i), "device_free", dev.ooms[i].deviceFree);
        }
    }
    for (const TimeWindow& w : snap.timeWindows) {
        if (mag(w.startUs) > uint64_t(kMaxTime) || mag(w.endUs) > uint64_t(kMaxTime))
            bad("time window '" + w.name + "'", "time", mag(w.startUs) > uint64_t(kMaxTime) ? w.startUs : w.endUs,
                "|t| < 2^60 us");
    }
    for (const Annotation& a : snap.annotations)
        if (mag(a.timeUs) > uint64_t(kMaxTime))
            bad("annotation '" + a.name + "'", "time", a.timeUs, "|t| < 2^60 us");
}

std::shared_ptr<const LoadedTrace> loadFromBuffer(const InputBuffer& in, const Loader::Options& options)
{
    const uint8_t* d = in.data();
    const size_t n = in.size();
    size_t i = 0;
    while (i < n && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t'))
        ++i;
    if (n == 0)
        throw LoadError(in.path(), 0, "the file is empty; expected a memory snapshot or trace");
    auto result = std::make_shared<LoadedTrace>();
    result->fileBytes = in.fileSize();
    Snapshot& snap = result->snapshot;
    snap.path = in.path();
    const uint64_t total = n;
    const std::string transport =
        in.encoding() != InputBuffer::Encoding::Plain ? std::string(", ") + encodingName(in.encoding()) : "";
    if (NativeFormat::isNative(d, n)) {
        NativeFormat::read(d, n, in.path(), snap);
        snap.format = "Headroom trace (.hrt) of: " + snap.format;
    } else if (d[0] != 0x80) {
        if (i < n && (d[i] == '{' || d[i] == '[')) {
            JsonImport::import(in.view(), in.path(), snap);
            snap.format += transport;
        } else {
            throw LoadError(in.path(), 0,
                            "unrecognised format: expected a PyTorch memory snapshot (pickle or JSON), a profiler "
                            "memory timeline, a Chrome trace or a Headroom .hrt file, optionally gzip- or "
                            "zstd-compressed or embedded in a _memory_viz HTML page");
        }
    } else {
        PickleReader::Options popt;
        popt.cancel = options.cancel;
        if (options.progress)
            popt.progress = [&](uint64_t done, uint64_t) { options.progress(done * 9 / 10, total); };
        // releaseBefore() gives back everything from the start of the file: called at every
        // parser checkpoint, the kernel walked the already-released page tables again each
        // time, and sys time grew with the square of the file (2.5 s of 5.7 s on a 10M-event,
        // 1.8 GiB file). Every 32 MiB instead: at most that much more of the file resident.
        size_t released = 0;
        popt.consumed = [&in, released](size_t offset) mutable {
            const size_t upTo = offset > (1 << 20) ? offset - (1 << 20) : 0;
            if (upTo >= released + (size_t(32) << 20)) {
                in.releaseBefore(upTo);
                released = upTo;
            }
        };
        PickleDocument doc(snap.frames);
        PickleReader::parse(doc, d, n, in.path(), popt);
        snap.format = std::string(doc.cppPicklerStyle() ? "C++ (TorchScript) pickler, protocol "
                                                        : "pickle protocol ") +
                      std::to_string(doc.protocol()) + transport;
        SnapshotImporter::import(doc, snap);
        for (DeviceData& dev : snap.devices) {
            dev.sourceFormat = "snapshot";
            dev.sourceFile = in.path();
        }
    }
    if (options.cancel && options.cancel->load())
        throw LoadCancelled();
    checkRanges(snap, in.path());
    for (DeviceData& dev : snap.devices)
        dev.trace.compactStreams();
    // Replay notes are derived, not stored twice: a reopened .hrt already carries them.
    auto addNote = [&snap](std::string note) {
        if (std::find(snap.notes.begin(), snap.notes.end(), note) == snap.notes.end())
            snap.notes.push_back(std::move(note));
    };
    for (const DeviceData& dev : snap.devices) {
        result->timelines.push_back(replayDevice(dev));
        result->timelines.back().reservedRecorded = !cpuRecorded(snap);
        const MemoryTimeline& t = result->timelines.back();
        const std::string dn = "device " + std::to_string(dev.device) + ": ";
        if (t.initialAllocationCount > 0 && dev.trace.count() > 0 && dev.trace.totalAllocated.empty())
            addNote(dn + std::to_string(t.initialAllocationCount) +
                                 " allocations were alive before the trace began (history enabled late, or "
                                 "the ring buffer wrapped)");
        if (dev.trace.count() > 0 && !dev.trace.anyTime)
            addNote(dn + "the trace has no time_us; the x-axis is the event index");
        if (dev.trace.count() == 0 && !dev.segments.empty())
            addNote(dn + "no trace entries (history was not recorded); only the final state is known");
    }
    if (options.progress)
        options.progress(total, total);
    return result;
}

} // namespace

std::shared_ptr<const LoadedTrace> Loader::load(const std::string& path, const Options& options)
{
    InputBuffer in = InputBuffer::open(path, options.maxInflated);
    return loadFromBuffer(in, options);
}

std::shared_ptr<const LoadedTrace> Loader::loadBytes(const std::string& name, std::vector<uint8_t> bytes,
                                                     const Options& options)
{
    InputBuffer in = InputBuffer::fromBytes(name, std::move(bytes), options.maxInflated);
    return loadFromBuffer(in, options);
}

} // namespace headroom
