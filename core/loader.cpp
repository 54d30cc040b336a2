// SPDX-License-Identifier: MIT
#include "core/loader.h"

#include "core/inputbuffer.h"
#include "core/jsonimport.h"
#include "core/loaderror.h"
#include "core/nativeformat.h"
#include "core/snapshotimporter.h"

#include <algorithm>

namespace headroom {

namespace {

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
    // Replay notes are derived, not stored twice: a reopened .hrt already carries them.
    auto addNote = [&snap](std::string note) {
        if (std::find(snap.notes.begin(), snap.notes.end(), note) == snap.notes.end())
            snap.notes.push_back(std::move(note));
    };
    for (const DeviceData& dev : snap.devices) {
        result->timelines.push_back(replayDevice(dev));
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

const MemoryTimeline* LoadedTrace::timelineFor(int device) const
{
    for (const auto& t : timelines)
        if (t.device == device)
            return &t;
    return nullptr;
}

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
