// SPDX-License-Identifier: MIT
// Writer and reader of the .hrt format; the byte layout is specified in docs/native-format.md.
#include "core/native/nativeformat.h"

#include "core/native/nativereader.h"
#include "core/util/atomicfile.h"
#include "core/util/loaderror.h"
#include "core/util/utf8.h"

#include <nlohmann/json.hpp>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>

#include "core/native/nativelayout.h"

namespace headroom {

namespace {

using json = nlohmann::json;

/// A recorded tensor's links and op graph (docs/formats.md: like, op, inputs, saves, casts,
/// dtype_arg) as the .hrt tensor row's ninth item; empty where it has none. A reader that
/// knows only eight items ignores it.
json tensorGraphJson(const RecordedTensor& t)
{
    json g = json::object();
    if (!t.like.empty())
        g["like"] = t.like;
    if (t.hasOp) {
        g["op"] = t.op;
        g["inputs"] = t.inputs;
        if (!t.saves.empty())
            g["saves"] = t.saves;
    }
    auto cast = [](const RecordedTensor::Cast& c) { return json{c.input, c.dtype, c.like, c.bytes}; };
    if (!t.casts.empty()) {
        json casts = json::array();
        for (const RecordedTensor::Cast& c : t.casts)
            casts.push_back(cast(c));
        g["casts"] = casts;
    }
    if (t.dtypeArg.dtype || t.dtypeArg.like)
        g["dtype_arg"] = cast(t.dtypeArg);
    return g;
}



using namespace nativelayout;

class Out {
public:
    std::vector<uint8_t> bytes;
    template <typename T>
    void put(T v)
    {
        const size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        std::memcpy(bytes.data() + at, &v, sizeof(T)); // little-endian hosts only (x86-64, arm64)
    }
    void raw(const void* p, size_t n)
    {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes.insert(bytes.end(), b, b + n);
    }
    void str(std::string_view s)
    {
        put<uint32_t>(static_cast<uint32_t>(s.size()));
        raw(s.data(), s.size());
    }
};

template <typename T>
void column(Out& o, const char id[4], const std::vector<T>& v, bool delta)
{
    o.raw(id, 4);
    o.put<uint32_t>(delta ? kEncDelta : kEncRaw);
    o.put<uint64_t>(v.size() * sizeof(T));
    if (!delta) {
        o.raw(v.data(), v.size() * sizeof(T));
        return;
    }
    T prev = 0;
    for (T x : v) {
        o.put<T>(static_cast<T>(static_cast<std::make_unsigned_t<T>>(x) - static_cast<std::make_unsigned_t<T>>(prev)));
        prev = x;
    }
}

template <typename A, typename B>
void pairColumn(Out& o, const char id[4], const std::vector<std::pair<A, B>>& v)
{
    o.raw(id, 4);
    o.put<uint32_t>(kEncRaw);
    o.put<uint64_t>(v.size() * (sizeof(A) + sizeof(B)));
    for (const auto& [a, b] : v) {
        o.put<A>(a);
        o.put<B>(b);
    }
}

void section(Out& file, const char id[4], const std::vector<uint8_t>& payload, bool critical,
             const NativeFormat::WriteOptions& opt)
{
    std::vector<uint8_t> packed;
    uint32_t flags = critical ? kCritical : 0;
    if (opt.compress && !payload.empty()) {
        packed.resize(ZSTD_compressBound(payload.size()));
        const size_t n = ZSTD_compress(packed.data(), packed.size(), payload.data(), payload.size(), opt.zstdLevel);
        if (ZSTD_isError(n))
            throw SaveError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
        packed.resize(n);
        flags |= kCompressed;
    }
    const std::vector<uint8_t>& body = (flags & kCompressed) ? packed : payload;
    file.raw(id, 4);
    file.put<uint32_t>(flags);
    file.put<uint64_t>(body.size());
    file.put<uint64_t>(payload.size());
    file.raw(body.data(), body.size());
}

std::vector<uint8_t> deviceSection(const DeviceData& d)
{
    Out o;
    json h;
    h["device"] = d.device;
    h["device_type"] = d.deviceType;
    h["source_format"] = d.sourceFormat;
    h["source_file"] = d.sourceFile;
    h["rank"] = d.rank;
    h["relative_curve"] = d.relativeCurve;
    h["events"] = d.trace.count();
    h["any_time"] = d.trace.anyTime;
    h["action_counts"] = d.actionCounts;
    json ooms = json::array();
    for (const OomEvent& oom : d.ooms)
        ooms.push_back({oom.eventIndex, oom.size, oom.deviceFree});
    h["ooms"] = ooms;
    // What a recorder said of its tensors (few per event at most): in the header, string ids
    // into the pool like the sparse columns.
    if (!d.trace.tensors.empty()) {
        json tensors = json::array();
        for (const auto& [ev, t] : d.trace.tensors) {
            json row = {ev, t.shape, t.dtype, t.hasModule ? json(t.module) : json(nullptr), int(t.kind),
                        int(t.phase), t.batchDims, t.seqDims};
            if (json graph = tensorGraphJson(t); !graph.empty())
                row.push_back(std::move(graph));
            tensors.push_back(std::move(row));
        }
        h["tensors"] = tensors;
    }
    if (!d.trace.poolIds.empty()) {
        json pools = json::array();
        for (const auto& [ev, id] : d.trace.poolIds)
            pools.push_back({ev, id.first, id.second});
        h["pool_ids"] = pools;
    }
    o.str(h.dump());
    const TraceEvents& t = d.trace;
    std::vector<uint8_t> actions(t.count());
    for (size_t i = 0; i < t.count(); ++i)
        actions[i] = static_cast<uint8_t>(t.action[i]);
    column(o, "actn", actions, false);
    column(o, "addr", t.addr, true);
    column(o, "size", t.size, false);
    const std::vector<int64_t> uniform = t.stream.empty() ? t.streams() : std::vector<int64_t>{}; // compactStreams()
    column(o, "strm", t.stream.empty() ? uniform : t.stream, false);
    column(o, "time", t.timeUs, true);
    column(o, "stck", t.stack, false);
    if (!t.category.empty())
        column(o, "catg", t.category, false);
    if (!t.totalAllocated.empty())
        column(o, "tall", t.totalAllocated, true);
    if (!t.totalReserved.empty())
        column(o, "tres", t.totalReserved, true);
    pairColumn(o, "dfre", t.deviceFree);
    pairColumn(o, "cctx", t.compileContext);
    pairColumn(o, "umet", t.userMetadata);
    if (!t.forwardFrames.empty())
        pairColumn(o, "fwdf", t.forwardFrames);
    Out segs;
    for (const Segment& s : d.segments) {
        segs.put<int32_t>(s.device);
        segs.put<uint64_t>(s.address);
        segs.put<int64_t>(s.totalSize);
        segs.put<int64_t>(s.allocatedSize);
        segs.put<int64_t>(s.activeSize);
        segs.put<int64_t>(s.requestedSize);
        segs.put<int64_t>(s.stream);
        segs.put<uint8_t>(s.largePool);
        segs.put<uint8_t>(s.expandable);
        segs.put<int64_t>(s.poolId.first);
        segs.put<int64_t>(s.poolId.second);
        segs.put<uint32_t>(s.stack);
        segs.put<uint32_t>(s.firstBlock);
        segs.put<uint32_t>(s.blockCount);
    }
    column(o, "segs", segs.bytes, false);
    Out blks;
    for (const Block& b : d.blocks) {
        blks.put<uint64_t>(b.address);
        blks.put<int64_t>(b.size);
        blks.put<int64_t>(b.requestedSize);
        blks.put<uint8_t>(static_cast<uint8_t>(b.state));
        blks.put<uint32_t>(b.stack);
    }
    column(o, "blks", blks.bytes, false);
    return std::move(o.bytes);
}

} // namespace

bool NativeFormat::isNative(const uint8_t* data, size_t size)
{
    return size >= 8 && std::memcmp(data, kMagic, 4) == 0;
}

std::vector<uint8_t> NativeFormat::encode(const Snapshot& snap, const WriteOptions& opt)
{
    Out file;
    file.raw(kMagic, 8);
    file.put<uint16_t>(kMajor);
    file.put<uint16_t>(kMinor);
    file.put<uint32_t>(0);
    file.put<uint64_t>(0);

    json meta;
    meta["writer"] = std::string("headroom ") + HEADROOM_VERSION;
    meta["source_path"] = snap.path;
    meta["format"] = snap.format;
    meta["schema"] = snap.schemaEra;
    meta["notes"] = snap.notes;
    meta["allocator_settings"] = snap.allocatorSettings;
    meta["run_config"] = snap.runConfig;
    json ann = json::array();
    for (const Annotation& a : snap.annotations)
        ann.push_back({{"name", a.name}, {"start", a.start}, {"device", a.device}, {"time_us", a.timeUs}});
    meta["annotations"] = ann;
    json windows = json::array();
    for (const TimeWindow& w : snap.timeWindows)
        windows.push_back({w.name, w.startUs, w.endUs, timeWindowKindName(w.kind), w.tid});
    meta["time_windows"] = windows;
    const std::string metaText = meta.dump();
    section(file, "META", std::vector<uint8_t>(metaText.begin(), metaText.end()), true, opt);

    const StringPool& pool = snap.frames.strings();
    Out strs;
    strs.put<uint32_t>(pool.size());
    for (uint32_t i = 0; i < pool.size(); ++i)
        strs.str(pool.get(i));
    section(file, "STRS", strs.bytes, true, opt);

    Out frms;
    frms.put<uint32_t>(snap.frames.frameCount());
    for (uint32_t i = 0; i < snap.frames.frameCount(); ++i) {
        const Frame& f = snap.frames.frame(i);
        frms.put<uint32_t>(f.file);
        frms.put<uint32_t>(f.name);
        frms.put<int64_t>(f.line);
    }
    section(file, "FRMS", frms.bytes, true, opt);

    Out stks;
    const uint32_t stacks = snap.frames.stackCount();
    stks.put<uint32_t>(stacks);
    uint32_t offset = 0;
    stks.put<uint32_t>(0);
    for (uint32_t i = 0; i < stacks; ++i) {
        offset += static_cast<uint32_t>(snap.frames.stack(i).size());
        stks.put<uint32_t>(offset);
    }
    for (uint32_t i = 0; i < stacks; ++i)
        for (uint32_t f : snap.frames.stack(i))
            stks.put<uint32_t>(f);
    section(file, "STKS", stks.bytes, true, opt);

    // torch.compile's FX nodes behind frames of generated code: optional, an older reader
    // skips the section and shows the generated frames.
    Out fxnd;
    uint32_t fxCount = 0;
    for (uint32_t i = 0; i < snap.frames.frameCount(); ++i)
        if (const FxFrame* fx = snap.frames.fx(i)) {
            fxnd.put<uint32_t>(i);
            for (uint32_t s : {fx->op, fx->node, fx->target, fx->originalTrace})
                fxnd.put<uint32_t>(s);
            ++fxCount;
        }
    if (fxCount > 0) {
        Out body;
        body.put<uint32_t>(fxCount);
        body.raw(fxnd.bytes.data(), fxnd.bytes.size());
        section(file, "FXND", body.bytes, false, opt);
    }

    for (const DeviceData& d : snap.devices)
        section(file, "DEVC", deviceSection(d), true, opt);
    const std::string& user = opt.userData ? *opt.userData : snap.userData;
    if (!user.empty())
        section(file, "USER", std::vector<uint8_t>(user.begin(), user.end()), false, opt);
    section(file, "END ", {}, false, WriteOptions{false, 0, std::nullopt});
    return std::move(file.bytes);
}

void NativeFormat::write(const Snapshot& snap, const std::string& path, const WriteOptions& opt)
{
    const std::vector<uint8_t> bytes = encode(snap, opt);
    AtomicFile::write(path, bytes);
}

void NativeFormat::read(const uint8_t* data, size_t size, const std::string& path, Snapshot& snapshot)
{
    NativeReader::read(data, size, path, snapshot);
}

} // namespace headroom
