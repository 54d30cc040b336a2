// SPDX-License-Identifier: MIT
// Writer and reader of the .hrt format; the byte layout is specified in docs/native-format.md.
#include "core/nativeformat.h"

#include "core/atomicfile.h"
#include "core/loaderror.h"
#include "core/utf8.h"

#include <nlohmann/json.hpp>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>

namespace headroom {

namespace {

using json = nlohmann::json;

constexpr uint32_t kCompressed = 1u;
constexpr uint32_t kCritical = 2u;
constexpr uint32_t kEncRaw = 0;
constexpr uint32_t kEncDelta = 1;

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
    o.str(h.dump());
    const TraceEvents& t = d.trace;
    std::vector<uint8_t> actions(t.count());
    for (size_t i = 0; i < t.count(); ++i)
        actions[i] = static_cast<uint8_t>(t.action[i]);
    column(o, "actn", actions, false);
    column(o, "addr", t.addr, true);
    column(o, "size", t.size, false);
    column(o, "strm", t.stream, false);
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

constexpr size_t kSegmentRecord = 4 + 8 * 6 + 2 + 16 + 12;
constexpr size_t kBlockRecord = 8 * 3 + 1 + 4;

/// Bounds-checked reading of one section payload; errors name the section and offset.
class In {
public:
    In(const std::string& file, std::string where, const uint8_t* p, size_t n)
        : m_file(file), m_where(std::move(where)), m_p(p), m_n(n)
    {
    }
    [[noreturn]] void fail(const std::string& what) const
    {
        throw LoadError(m_file, LoadError::kNoOffset, m_where + ", byte " + std::to_string(m_pos) + ": " + what);
    }
    void need(size_t k) const
    {
        if (m_n - m_pos < k)
            fail("expected " + std::to_string(k) + " more bytes, the section ends after " +
                 std::to_string(m_n - m_pos) + "; the file is corrupt or truncated");
    }
    /// A count read from the file must be backed by bytes (each item takes at least `each`)
    /// before anything is sized by it: a corrupt count must not allocate gigabytes.
    void needCount(uint64_t n, size_t each) const
    {
        if (n > (m_n - m_pos) / each)
            fail("a count of " + std::to_string(n) + " items needs at least " + std::to_string(each) +
                 " bytes each but the section has " + std::to_string(m_n - m_pos) + " left; the file is corrupt");
    }
    template <typename T>
    T get()
    {
        need(sizeof(T));
        T v;
        std::memcpy(&v, m_p + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return v;
    }
    std::string_view str()
    {
        const uint32_t len = get<uint32_t>();
        need(len);
        std::string_view s(reinterpret_cast<const char*>(m_p + m_pos), len);
        m_pos += len;
        return s;
    }
    const uint8_t* take(size_t k)
    {
        need(k);
        const uint8_t* p = m_p + m_pos;
        m_pos += k;
        return p;
    }
    bool atEnd() const { return m_pos == m_n; }

private:
    const std::string& m_file;
    std::string m_where;
    const uint8_t* m_p;
    size_t m_n;
    size_t m_pos = 0;
};

template <typename T>
void readColumn(In& in, std::vector<T>& out, uint32_t enc, size_t len, size_t expect, const char* id)
{
    if (len % sizeof(T) != 0 || (expect != SIZE_MAX && len / sizeof(T) != expect))
        in.fail(std::string("column ") + id + ": expected " +
                (expect == SIZE_MAX ? std::string("a multiple of ") + std::to_string(sizeof(T))
                                    : std::to_string(expect * sizeof(T))) + " bytes, found " + std::to_string(len));
    if (enc != kEncRaw && enc != kEncDelta)
        in.fail(std::string("column ") + id + ": unknown encoding " + std::to_string(enc));
    const uint8_t* src = in.take(len); // bounds-checked before anything is sized by len
    out.resize(len / sizeof(T));
    if (len > 0) // an empty column: out.data() may be null, which memcpy must not get
        std::memcpy(out.data(), src, len);
    if (enc == kEncDelta) {
        using U = std::make_unsigned_t<T>;
        U acc = 0;
        for (T& x : out) {
            acc = static_cast<U>(acc + static_cast<U>(x));
            x = static_cast<T>(acc);
        }
    }
}

template <typename A, typename B>
void readPairs(In& in, std::vector<std::pair<A, B>>& out, size_t len, size_t events, const char* id)
{
    if (len % (sizeof(A) + sizeof(B)) != 0)
        in.fail(std::string("column ") + id + ": length " + std::to_string(len) + " is not a whole number of pairs");
    for (size_t k = 0; k < len / (sizeof(A) + sizeof(B)); ++k) {
        const A a = in.get<A>();
        const B b = in.get<B>();
        if (static_cast<size_t>(a) >= events)
            in.fail(std::string("column ") + id + ": event index " + std::to_string(a) + " out of range");
        out.emplace_back(a, b);
    }
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

namespace {

struct ReadState {
    std::vector<uint32_t> strRemap, frameRemap, stackRemap;
};

TimeWindowKind windowKindFrom(std::string_view s)
{
    for (auto k : {TimeWindowKind::UserAnnotation, TimeWindowKind::ProfilerStep, TimeWindowKind::OptimizerStep,
                   TimeWindowKind::ZeroGrad, TimeWindowKind::Backward})
        if (s == timeWindowKindName(k))
            return k;
    return TimeWindowKind::Other;
}

/// nlohmann's get<int>/get<int64_t> cast a float without a range check (undefined behaviour;
/// found by fuzzing: 1.7e32 as a time). Headroom writes no floats into these headers, so
/// any float beyond ±2^31 is corrupt. Iterative: a deeply nested header must not recurse.
const json* hugeFloat(const json& root)
{
    std::vector<const json*> todo{&root};
    while (!todo.empty()) {
        const json* v = todo.back();
        todo.pop_back();
        if (v->is_number_float() && !(std::abs(v->get<double>()) < 2147483648.0))
            return v;
        if (v->is_structured())
            for (const json& c : *v)
                todo.push_back(&c);
    }
    return nullptr;
}

void readMeta(const std::string& path, std::string_view text, Snapshot& snap)
{
    json m;
    try {
        m = json::parse(text);
        if (const json* f = hugeFloat(m))
            throw LoadError(path, LoadError::kNoOffset, "section META: number " + f->dump() + " is out of range");
        snap.format = m.value("format", std::string());
        snap.schemaEra = m.value("schema", std::string());
        snap.notes = m.value("notes", std::vector<std::string>{});
        if (m.contains("allocator_settings"))
            snap.allocatorSettings = m["allocator_settings"].get<std::vector<std::pair<std::string, std::string>>>();
        for (const json& a : m.value("annotations", json::array()))
            snap.annotations.push_back({a.at("name").get<std::string>(), a.at("start").get<bool>(),
                                        a.at("device").get<int>(), a.at("time_us").get<int64_t>()});
        for (const json& w : m.value("time_windows", json::array()))
            snap.timeWindows.push_back({w.at(0).get<std::string>(), w.at(1).get<int64_t>(), w.at(2).get<int64_t>(),
                                        windowKindFrom(w.at(3).get<std::string>()),
                                        w.size() > 4 ? w.at(4).get<int64_t>() : 0});
    } catch (const json::exception& e) {
        throw LoadError(path, LoadError::kNoOffset, std::string("section META: expected the metadata JSON object (") +
                                                        e.what() + ")");
    }
}

void readDevice(In& in, const ReadState& st, Snapshot& snap)
{
    DeviceData d;
    size_t events = 0;
    try {
        const json h = json::parse(in.str());
        if (const json* f = hugeFloat(h))
            in.fail("device header: number " + f->dump() + " is out of range");
        d.device = h.at("device").get<int>();
        d.deviceType = h.value("device_type", std::string("cuda"));
        d.sourceFormat = h.value("source_format", std::string());
        d.sourceFile = h.value("source_file", std::string());
        d.rank = h.value("rank", -1);
        d.relativeCurve = h.value("relative_curve", false);
        events = h.at("events").get<size_t>();
        d.trace.anyTime = h.value("any_time", false);
        d.actionCounts = h.value("action_counts", std::map<std::string, uint64_t>{});
        for (const json& o : h.value("ooms", json::array()))
            d.ooms.push_back({o.at(0).get<int64_t>(), o.at(1).get<int64_t>(), o.at(2).get<int64_t>()});
    } catch (const json::exception& e) {
        in.fail(std::string("expected the device header JSON (") + e.what() + ")");
    }
    in.needCount(events, 1); // every event has an action byte; -1 read as size_t must not size anything
    TraceEvents& t = d.trace;
    std::vector<uint8_t> actions;
    bool seen[6] = {};
    while (!in.atEnd()) {
        const std::string id(reinterpret_cast<const char*>(in.take(4)), 4);
        const auto enc = in.get<uint32_t>();
        const auto len = in.get<uint64_t>();
        in.need(len);
        if (id == "actn") { readColumn(in, actions, enc, len, events, "actn"); seen[0] = true; }
        else if (id == "addr") { readColumn(in, t.addr, enc, len, events, "addr"); seen[1] = true; }
        else if (id == "size") { readColumn(in, t.size, enc, len, events, "size"); seen[2] = true; }
        else if (id == "strm") { readColumn(in, t.stream, enc, len, events, "strm"); seen[3] = true; }
        else if (id == "time") { readColumn(in, t.timeUs, enc, len, events, "time"); seen[4] = true; }
        else if (id == "stck") { readColumn(in, t.stack, enc, len, events, "stck"); seen[5] = true; }
        else if (id == "catg") readColumn(in, t.category, enc, len, events, "catg");
        else if (id == "tall") readColumn(in, t.totalAllocated, enc, len, events, "tall");
        else if (id == "tres") readColumn(in, t.totalReserved, enc, len, events, "tres");
        else if (id == "dfre") readPairs(in, t.deviceFree, len, events, "dfre");
        else if (id == "cctx") readPairs(in, t.compileContext, len, events, "cctx");
        else if (id == "umet") readPairs(in, t.userMetadata, len, events, "umet");
        else if (id == "segs") {
            if (len % kSegmentRecord)
                in.fail("column segs: length is not a whole number of segment records");
            for (size_t k = 0; k < len / kSegmentRecord; ++k) {
                Segment s;
                s.device = in.get<int32_t>();
                s.address = in.get<uint64_t>();
                s.totalSize = in.get<int64_t>();
                s.allocatedSize = in.get<int64_t>();
                s.activeSize = in.get<int64_t>();
                s.requestedSize = in.get<int64_t>();
                s.stream = in.get<int64_t>();
                s.largePool = in.get<uint8_t>() != 0;
                s.expandable = in.get<uint8_t>() != 0;
                s.poolId.first = in.get<int64_t>();
                s.poolId.second = in.get<int64_t>();
                s.stack = in.get<uint32_t>();
                s.firstBlock = in.get<uint32_t>();
                s.blockCount = in.get<uint32_t>();
                d.segments.push_back(s);
            }
        } else if (id == "blks") {
            if (len % kBlockRecord)
                in.fail("column blks: length is not a whole number of block records");
            for (size_t k = 0; k < len / kBlockRecord; ++k) {
                Block b;
                b.address = in.get<uint64_t>();
                b.size = in.get<int64_t>();
                b.requestedSize = in.get<int64_t>();
                const uint8_t state = in.get<uint8_t>();
                b.state = state <= static_cast<uint8_t>(BlockState::Unknown) ? static_cast<BlockState>(state)
                                                                              : BlockState::Unknown;
                b.stack = in.get<uint32_t>();
                d.blocks.push_back(b);
            }
        } else {
            in.take(len); // a column from a newer writer: skip it
        }
    }
    static const char* kRequired[] = {"actn", "addr", "size", "strm", "time", "stck"};
    for (int k = 0; k < 6; ++k)
        if (!seen[k])
            in.fail(std::string("missing required column ") + kRequired[k]);
    t.action.resize(events);
    for (size_t i = 0; i < events; ++i)
        t.action[i] = actions[i] <= static_cast<uint8_t>(TraceAction::Other) ? static_cast<TraceAction>(actions[i])
                                                                                : TraceAction::Other;
    for (uint32_t& s : t.stack) {
        if (s >= st.stackRemap.size())
            in.fail("column stck: stack id " + std::to_string(s) + " out of range");
        s = st.stackRemap[s];
    }
    for (Segment& s : d.segments)
        s.stack = s.stack < st.stackRemap.size() ? st.stackRemap[s.stack] : 0;
    for (Block& b : d.blocks)
        b.stack = b.stack < st.stackRemap.size() ? st.stackRemap[b.stack] : 0;
    for (Segment& s : d.segments)
        if (static_cast<uint64_t>(s.firstBlock) + s.blockCount > d.blocks.size())
            in.fail("segment blocks out of range");
    for (auto* sparse : {&t.compileContext, &t.userMetadata})
        for (auto& [ev, sid] : *sparse)
            sid = sid < st.strRemap.size() ? st.strRemap[sid] : 0;
    for (const OomEvent& o : d.ooms)
        if (o.eventIndex >= static_cast<int64_t>(events))
            in.fail("oom event index out of range");
    snap.devices.push_back(std::move(d));
}

/// Decompresses one section into `buffer`, growing it with the output actually produced (not
/// with the size the header claims: found by fuzzing, a 60 GiB claim allocated 60 GiB).
void inflateSection(const std::string& path, size_t headerAt, const std::string& id, const uint8_t* payload,
                    size_t stored, uint64_t rawSize, std::vector<uint8_t>& buffer)
{
    auto corrupt = [&](const std::string& why) {
        throw LoadError(path, static_cast<int64_t>(headerAt + 24), "section '" + id + "': corrupt zstd data (" + why + ")");
    };
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    ZSTD_inBuffer inb{payload, stored, 0};
    // One byte more than claimed, so output beyond the claim is seen.
    const uint64_t capacity = rawSize + 1;
    buffer.resize(std::min<uint64_t>(capacity, std::max<uint64_t>(uint64_t(stored) * 8, 1 << 20)));
    size_t produced = 0;
    while (true) {
        ZSTD_outBuffer ob{buffer.data() + produced, buffer.size() - produced, 0};
        const size_t ret = ZSTD_decompressStream(dctx.get(), &ob, &inb);
        produced += ob.pos;
        if (ZSTD_isError(ret))
            corrupt(ZSTD_getErrorName(ret));
        if (produced > rawSize)
            corrupt("more data than the " + std::to_string(rawSize) + " bytes the header claims");
        if (ret == 0 && inb.pos == inb.size)
            break; // (ret 0 with input left: another frame follows)
        if (produced == buffer.size())
            buffer.resize(std::min<uint64_t>(capacity, uint64_t(buffer.size()) * 2));
        else if (inb.pos == inb.size && ob.pos == 0)
            corrupt("the data ends early");
    }
    if (produced != rawSize)
        corrupt("wrong size: " + std::to_string(produced) + " bytes, the header claims " + std::to_string(rawSize));
    buffer.resize(produced);
}

} // namespace

void NativeFormat::read(const uint8_t* data, size_t size, const std::string& path, Snapshot& snap)
{
    if (size < 24 || std::memcmp(data, kMagic, 8) != 0)
        throw LoadError(path, 0, "not a Headroom trace: expected the .hrt header (\\x89HRT\\r\\n\\x1a\\n + version)");
    uint16_t major, minor;
    std::memcpy(&major, data + 8, 2);
    std::memcpy(&minor, data + 10, 2);
    if (major != kMajor)
        throw LoadError(path, 8, "Headroom trace format version " + std::to_string(major) + "." + std::to_string(minor) +
                                     " cannot be read by this build, which reads version " + std::to_string(kMajor) +
                                     ".x; " + (major > kMajor ? "open it with a newer Headroom" : "the file is corrupt"));
    ReadState st;
    size_t pos = 24;
    bool ended = false, haveMeta = false;
    std::vector<uint8_t> buffer;
    while (pos < size && !ended) {
        if (size - pos < 24)
            throw LoadError(path, static_cast<int64_t>(pos), "expected a section header (24 bytes); the file is truncated");
        const std::string id(reinterpret_cast<const char*>(data + pos), 4);
        uint32_t flags;
        uint64_t stored, rawSize;
        std::memcpy(&flags, data + pos + 4, 4);
        std::memcpy(&stored, data + pos + 8, 8);
        std::memcpy(&rawSize, data + pos + 16, 8);
        const size_t headerAt = pos;
        pos += 24;
        if (stored > size - pos)
            throw LoadError(path, static_cast<int64_t>(headerAt),
                            "section '" + id + "' claims " + std::to_string(stored) + " bytes but only " +
                                std::to_string(size - pos) + " remain; the file is truncated");
        const uint8_t* payload = data + pos;
        size_t payloadSize = stored;
        pos += stored;
        static const char* kKnown[] = {"META", "STRS", "FRMS", "STKS", "DEVC", "USER", "END "};
        bool known = false;
        for (const char* k : kKnown)
            known = known || id == k;
        if (!known) {
            if (flags & kCritical)
                throw LoadError(path, static_cast<int64_t>(headerAt),
                                "section '" + id + "' is required to read this file but unknown to this build; "
                                "open it with a newer Headroom");
            continue; // forward compatible: skip what we do not know
        }
        if (flags & kCompressed) {
            if (rawSize > (uint64_t(1) << 36))
                throw LoadError(path, static_cast<int64_t>(headerAt), "section '" + id + "' claims an implausible size");
            inflateSection(path, headerAt, id, payload, stored, rawSize, buffer);
            payload = buffer.data();
            payloadSize = rawSize;
        } else if (rawSize != stored) {
            throw LoadError(path, static_cast<int64_t>(headerAt),
                            "section '" + id + "': stored and raw sizes differ for an uncompressed section");
        }
        In in(path, "section '" + id + "' at byte " + std::to_string(headerAt), payload, payloadSize);
        if (id == "END ") {
            ended = true;
        } else if (id == "META") {
            readMeta(path, std::string_view(reinterpret_cast<const char*>(payload), payloadSize), snap);
            haveMeta = true;
        } else if (id == "USER") {
            snap.userData.assign(reinterpret_cast<const char*>(payload), payloadSize);
        } else if (id == "STRS") {
            const uint32_t n = in.get<uint32_t>();
            in.needCount(n, 4);
            st.strRemap.resize(n);
            for (uint32_t i = 0; i < n; ++i) {
                const std::string_view sv = in.str();
                if (utf8InvalidAt(reinterpret_cast<const uint8_t*>(sv.data()), sv.size()) != sv.size())
                    in.fail("string " + std::to_string(i) + " is not valid UTF-8");
                st.strRemap[i] = snap.frames.strings().intern(sv);
            }
        } else if (id == "FRMS") {
            const uint32_t n = in.get<uint32_t>();
            in.needCount(n, 16);
            st.frameRemap.resize(n);
            auto& pool = snap.frames.strings();
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t file = in.get<uint32_t>(), name = in.get<uint32_t>();
                const int64_t line = in.get<int64_t>();
                if (file >= st.strRemap.size() || name >= st.strRemap.size())
                    in.fail("frame " + std::to_string(i) + ": string id out of range");
                const std::string f(pool.get(st.strRemap[file])), nm(pool.get(st.strRemap[name]));
                st.frameRemap[i] = snap.frames.internFrame(f, line, nm);
            }
        } else if (id == "STKS") {
            const uint32_t n = in.get<uint32_t>();
            in.needCount(static_cast<uint64_t>(n) + 1, 4);
            std::vector<uint32_t> offsets(static_cast<size_t>(n) + 1);
            for (auto& o : offsets)
                o = in.get<uint32_t>();
            st.stackRemap.assign(n == 0 ? 1 : n, 0);
            std::vector<uint32_t> frames;
            for (uint32_t i = 0; i < n; ++i) {
                if (offsets[i + 1] < offsets[i])
                    in.fail("stack offsets are not increasing");
                frames.clear();
                for (uint32_t k = offsets[i]; k < offsets[i + 1]; ++k) {
                    const uint32_t f = in.get<uint32_t>();
                    if (f >= st.frameRemap.size())
                        in.fail("stack " + std::to_string(i) + ": frame id out of range");
                    frames.push_back(st.frameRemap[f]);
                }
                st.stackRemap[i] = snap.frames.internStack(frames);
            }
        } else if (id == "DEVC") {
            if (st.stackRemap.empty())
                st.stackRemap.assign(1, 0);
            readDevice(in, st, snap);
        }
    }
    if (!ended)
        throw LoadError(path, static_cast<int64_t>(pos), "the file ends without its END section; it is truncated");
    if (!haveMeta)
        throw LoadError(path, LoadError::kNoOffset, "section META is missing");
    std::stable_sort(snap.devices.begin(), snap.devices.end(),
                     [](const DeviceData& a, const DeviceData& b) { return a.device < b.device; });
}

} // namespace headroom
