// SPDX-License-Identifier: MIT
// Reader of the .hrt format; the byte layout is specified in docs/native-format.md.
#include "core/native/nativereader.h"

#include "core/native/nativeformat.h"
#include "core/native/sectionreader.h"
#include "core/util/loaderror.h"
#include "core/util/utf8.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/native/nativelayout.h"

namespace headroom {

namespace {

using json = nlohmann::json;

/// The ninth item of a .hrt tensor row (nativeformat.cpp, tensorGraphJson).
void readTensorGraph(const json& g, RecordedTensor& t)
{
    t.like = g.value("like", std::vector<uint32_t>{});
    if (g.contains("op")) {
        t.hasOp = true;
        t.op = g.at("op").get<uint32_t>();
        t.inputs = g.value("inputs", std::vector<uint32_t>{});
        t.saves = g.value("saves", std::vector<int32_t>{});
    }
    auto cast = [](const json& c) {
        return RecordedTensor::Cast{c.at(0).get<uint32_t>(), c.at(1).get<uint32_t>(), c.at(2).get<uint32_t>(),
                                    c.at(3).get<int64_t>()};
    };
    for (const json& c : g.value("casts", json::array()))
        t.casts.push_back(cast(c));
    if (g.contains("dtype_arg"))
        t.dtypeArg = cast(g.at("dtype_arg"));
}

/// The casts whose dtype is a string id to remap.
std::vector<RecordedTensor::Cast*> castsOf(RecordedTensor& t)
{
    std::vector<RecordedTensor::Cast*> out{&t.dtypeArg};
    for (RecordedTensor::Cast& c : t.casts)
        out.push_back(&c);
    return out;
}



using namespace nativelayout;

/// Little-endian fields of a record already in memory (segments, blocks, sparse pairs).
class Record {
public:
    explicit Record(const uint8_t* p) : m_p(p) {}
    template <typename T>
    T get()
    {
        T v;
        std::memcpy(&v, m_p, sizeof(T));
        m_p += sizeof(T);
        return v;
    }

private:
    const uint8_t* m_p;
};

/// A column is read in place: its bytes go straight from the decompressor into `out`,
/// then a delta-encoded column is summed up in the same array.
template <typename T>
void readColumn(SectionReader& in, std::vector<T>& out, uint32_t enc, uint64_t len, size_t expect, const char* id)
{
    if (len % sizeof(T) != 0 || (expect != SIZE_MAX && len / sizeof(T) != expect))
        in.fail(std::string("column ") + id + ": expected " +
                (expect == SIZE_MAX ? std::string("a multiple of ") + std::to_string(sizeof(T))
                                    : std::to_string(expect * sizeof(T))) + " bytes, found " + std::to_string(len));
    if (enc != kEncRaw && enc != kEncDelta)
        in.fail(std::string("column ") + id + ": unknown encoding " + std::to_string(enc));
    in.readArray(out, static_cast<size_t>(len / sizeof(T)));
    if (enc == kEncDelta) {
        using I = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::type_identity<T>>::type;
        using U = std::make_unsigned_t<I>;
        U acc = 0;
        for (T& x : out) {
            acc = static_cast<U>(acc + static_cast<U>(x));
            x = static_cast<T>(static_cast<I>(acc));
        }
    }
}

/// A column of fixed-size records, returned as bytes.
std::vector<uint8_t> readRecords(SectionReader& in, uint64_t len, size_t record, const char* id)
{
    if (len % record != 0)
        in.fail(std::string("column ") + id + ": length " + std::to_string(len) + " is not a whole number of " +
                std::to_string(record) + "-byte records");
    std::vector<uint8_t> bytes;
    in.readArray(bytes, static_cast<size_t>(len));
    return bytes;
}

template <typename A, typename B>
void readPairs(SectionReader& in, std::vector<std::pair<A, B>>& out, uint64_t len, size_t events, const char* id)
{
    const std::vector<uint8_t> bytes = readRecords(in, len, sizeof(A) + sizeof(B), id);
    for (size_t k = 0; k < bytes.size(); k += sizeof(A) + sizeof(B)) {
        Record r(bytes.data() + k);
        const A a = r.get<A>();
        const B b = r.get<B>();
        if (static_cast<size_t>(a) >= events)
            in.fail(std::string("column ") + id + ": event index " + std::to_string(a) + " out of range");
        out.emplace_back(a, b);
    }
}

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
        if (m.contains("run_config"))
            snap.runConfig = m["run_config"].get<std::vector<std::pair<std::string, std::string>>>();
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

void readStrings(SectionReader& in, ReadState& st, Snapshot& snap)
{
    const uint32_t n = in.get<uint32_t>();
    in.needCount(n, 4);
    st.strRemap.clear();
    st.strRemap.reserve(std::min<size_t>(n, in.plausibleCount(4)));
    for (uint32_t i = 0; i < n; ++i) {
        const std::string s = in.str();
        if (utf8InvalidAt(reinterpret_cast<const uint8_t*>(s.data()), s.size()) != s.size())
            in.fail("string " + std::to_string(i) + " is not valid UTF-8");
        st.strRemap.push_back(snap.frames.strings().intern(s));
    }
}

void readFrames(SectionReader& in, ReadState& st, Snapshot& snap)
{
    const uint32_t n = in.get<uint32_t>();
    in.needCount(n, 16);
    st.frameRemap.clear();
    st.frameRemap.reserve(std::min<size_t>(n, in.plausibleCount(16)));
    auto& pool = snap.frames.strings();
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t file = in.get<uint32_t>(), name = in.get<uint32_t>();
        const int64_t line = in.get<int64_t>();
        if (file >= st.strRemap.size() || name >= st.strRemap.size())
            in.fail("frame " + std::to_string(i) + ": string id out of range");
        const std::string f(pool.get(st.strRemap[file])), nm(pool.get(st.strRemap[name]));
        st.frameRemap.push_back(snap.frames.internFrame(f, line, nm));
    }
}

void readFxNodes(SectionReader& in, ReadState& st, Snapshot& snap)
{
    const uint32_t n = in.get<uint32_t>();
    in.needCount(n, 20);
    auto& pool = snap.frames.strings();
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t frame = in.get<uint32_t>();
        std::string text[4];
        for (std::string& s : text) {
            const uint32_t id = in.get<uint32_t>();
            if (id >= st.strRemap.size())
                in.fail("FX node " + std::to_string(i) + ": string id out of range");
            s = pool.get(st.strRemap[id]);
        }
        if (frame >= st.frameRemap.size())
            in.fail("FX node " + std::to_string(i) + ": frame id out of range");
        snap.frames.setFx(st.frameRemap[frame], {text[0], text[1], text[2], text[3]});
    }
}

void readStacks(SectionReader& in, ReadState& st, Snapshot& snap)
{
    const uint32_t n = in.get<uint32_t>();
    in.needCount(static_cast<uint64_t>(n) + 1, 4);
    std::vector<uint32_t> offsets;
    in.readArray(offsets, static_cast<size_t>(n) + 1);
    for (uint32_t i = 0; i < n; ++i)
        if (offsets[i + 1] < offsets[i])
            in.fail("stack offsets are not increasing");
    std::vector<uint32_t> ids;
    in.readArray(ids, offsets.back() - offsets.front());
    st.stackRemap.assign(n == 0 ? 1 : n, 0);
    std::vector<uint32_t> frames;
    for (uint32_t i = 0; i < n; ++i) {
        frames.clear();
        for (uint32_t k = offsets[i]; k < offsets[i + 1]; ++k) {
            const uint32_t f = ids[k - offsets[0]];
            if (f >= st.frameRemap.size())
                in.fail("stack " + std::to_string(i) + ": frame id out of range");
            frames.push_back(st.frameRemap[f]);
        }
        st.stackRemap[i] = snap.frames.internStack(frames);
    }
}

void readDevice(SectionReader& in, const ReadState& st, Snapshot& snap)
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
        for (const json& r : h.value("tensors", json::array())) {
            RecordedTensor t;
            t.shape = r.at(1).get<std::vector<int64_t>>();
            t.dtype = r.at(2).get<uint32_t>();
            t.hasModule = !r.at(3).is_null();
            t.module = t.hasModule ? r.at(3).get<uint32_t>() : 0;
            t.kind = RecordedTensor::Kind(std::clamp(r.at(4).get<int>(), 0, int(RecordedTensor::Kind::Input)));
            t.phase = RecordedTensor::Phase(std::clamp(r.at(5).get<int>(), 0, int(RecordedTensor::Phase::Optimizer)));
            t.batchDims = r.at(6).get<uint32_t>();
            t.seqDims = r.at(7).get<uint32_t>();
            if (r.size() > 8)
                readTensorGraph(r.at(8), t);
            d.trace.tensors.emplace_back(r.at(0).get<uint32_t>(), std::move(t));
        }
        for (const json& r : h.value("pool_ids", json::array()))
            d.trace.poolIds.emplace_back(r.at(0).get<uint32_t>(),
                                         std::pair<int64_t, int64_t>{r.at(1).get<int64_t>(), r.at(2).get<int64_t>()});
    } catch (const json::exception& e) {
        in.fail(std::string("expected the device header JSON (") + e.what() + ")");
    }
    in.needCount(events, 1); // every event has an action byte; -1 read as size_t must not size anything
    TraceEvents& t = d.trace;
    bool seen[6] = {};
    while (!in.atEnd()) {
        char idBytes[4];
        in.read(idBytes, 4);
        const std::string id(idBytes, 4);
        const auto enc = in.get<uint32_t>();
        const auto len = in.get<uint64_t>();
        in.need(len);
        if (id == "actn") { readColumn(in, t.action, enc, len, events, "actn"); seen[0] = true; }
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
        else if (id == "fwdf") readPairs(in, t.forwardFrames, len, events, "fwdf");
        else if (id == "segs") {
            const std::vector<uint8_t> bytes = readRecords(in, len, kSegmentRecord, "segs");
            d.segments.reserve(bytes.size() / kSegmentRecord);
            for (size_t k = 0; k < bytes.size(); k += kSegmentRecord) {
                Record r(bytes.data() + k);
                Segment s;
                s.device = r.get<int32_t>();
                s.address = r.get<uint64_t>();
                s.totalSize = r.get<int64_t>();
                s.allocatedSize = r.get<int64_t>();
                s.activeSize = r.get<int64_t>();
                s.requestedSize = r.get<int64_t>();
                s.stream = r.get<int64_t>();
                s.largePool = r.get<uint8_t>() != 0;
                s.expandable = r.get<uint8_t>() != 0;
                s.poolId.first = r.get<int64_t>();
                s.poolId.second = r.get<int64_t>();
                s.stack = r.get<uint32_t>();
                s.firstBlock = r.get<uint32_t>();
                s.blockCount = r.get<uint32_t>();
                d.segments.push_back(s);
            }
        } else if (id == "blks") {
            const std::vector<uint8_t> bytes = readRecords(in, len, kBlockRecord, "blks");
            d.blocks.reserve(bytes.size() / kBlockRecord);
            for (size_t k = 0; k < bytes.size(); k += kBlockRecord) {
                Record r(bytes.data() + k);
                Block b;
                b.address = r.get<uint64_t>();
                b.size = r.get<int64_t>();
                b.requestedSize = r.get<int64_t>();
                const uint8_t state = r.get<uint8_t>();
                b.state = state <= static_cast<uint8_t>(BlockState::Unknown) ? static_cast<BlockState>(state)
                                                                              : BlockState::Unknown;
                b.stack = r.get<uint32_t>();
                d.blocks.push_back(b);
            }
        } else {
            in.skip(len); // a column from a newer writer: skip it
        }
    }
    static const char* kRequired[] = {"actn", "addr", "size", "strm", "time", "stck"};
    for (int k = 0; k < 6; ++k)
        if (!seen[k])
            in.fail(std::string("missing required column ") + kRequired[k]);
    for (TraceAction& a : t.action) // read as bytes: a value from a newer writer becomes Other
        if (static_cast<uint8_t>(a) > static_cast<uint8_t>(TraceAction::Other))
            a = TraceAction::Other;
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
    for (auto* sparse : {&t.compileContext, &t.userMetadata, &t.forwardFrames})
        for (auto& [ev, sid] : *sparse)
            sid = sid < st.strRemap.size() ? st.strRemap[sid] : 0;
    for (const auto& [ev, id] : t.poolIds)
        if (ev >= events)
            in.fail("device header: pool id at event " + std::to_string(ev) + " out of range");
    for (auto& [ev, rec] : t.tensors) {
        if (ev >= events)
            in.fail("device header: tensor record at event " + std::to_string(ev) + " out of range");
        rec.dtype = rec.dtype < st.strRemap.size() ? st.strRemap[rec.dtype] : 0;
        rec.module = rec.module < st.strRemap.size() ? st.strRemap[rec.module] : 0;
        rec.op = rec.op < st.strRemap.size() ? st.strRemap[rec.op] : 0;
        for (RecordedTensor::Cast* c : castsOf(rec))
            c->dtype = c->dtype < st.strRemap.size() ? st.strRemap[c->dtype] : 0;
    }
    if (!std::is_sorted(t.tensors.begin(), t.tensors.end(),
                        [](const auto& x, const auto& y) { return x.first < y.first; }))
        in.fail("device header: tensor records out of event order");
    for (const OomEvent& o : d.ooms)
        if (o.eventIndex >= static_cast<int64_t>(events))
            in.fail("oom event index out of range");
    snap.devices.push_back(std::move(d));
}

} // namespace

void NativeReader::read(const uint8_t* data, size_t size, const std::string& path, Snapshot& snap)
{
    if (size < 24 || std::memcmp(data, NativeFormat::kMagic, 8) != 0)
        throw LoadError(path, 0, "not a Headroom trace: expected the .hrt header (\\x89HRT\\r\\n\\x1a\\n + version)");
    uint16_t major, minor;
    std::memcpy(&major, data + 8, 2);
    std::memcpy(&minor, data + 10, 2);
    constexpr uint16_t kMajor = NativeFormat::kMajor;
    if (major != kMajor)
        throw LoadError(path, 8, "Headroom trace format version " + std::to_string(major) + "." + std::to_string(minor) +
                                     " cannot be read by this build, which reads version " + std::to_string(kMajor) +
                                     ".x; " + (major > kMajor ? "open it with a newer Headroom" : "the file is corrupt"));
    ReadState st;
    size_t pos = 24;
    bool ended = false, haveMeta = false;
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
        static const char* kKnown[] = {"META", "STRS", "FRMS", "STKS", "FXND", "DEVC", "USER", "END "};
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
        if ((flags & kCompressed) && rawSize > (uint64_t(1) << 36))
            throw LoadError(path, static_cast<int64_t>(headerAt), "section '" + id + "' claims an implausible size");
        if (!(flags & kCompressed) && rawSize != stored)
            throw LoadError(path, static_cast<int64_t>(headerAt),
                            "section '" + id + "': stored and raw sizes differ for an uncompressed section");
        SectionReader in(path, "section '" + id + "' at byte " + std::to_string(headerAt), payload, payloadSize,
                         rawSize, (flags & kCompressed) != 0);
        if (id == "END ") {
            ended = true;
        } else if (id == "META") {
            readMeta(path, in.rest(), snap);
            haveMeta = true;
        } else if (id == "USER") {
            snap.userData = in.rest();
        } else if (id == "STRS") {
            readStrings(in, st, snap);
        } else if (id == "FRMS") {
            readFrames(in, st, snap);
        } else if (id == "STKS") {
            readStacks(in, st, snap);
        } else if (id == "FXND") {
            readFxNodes(in, st, snap);
        } else if (id == "DEVC") {
            if (st.stackRemap.empty())
                st.stackRemap.assign(1, 0);
            readDevice(in, st, snap);
        }
        in.finish(); // trailing bytes are allowed; a compressed payload must still be whole
    }
    if (!ended)
        throw LoadError(path, static_cast<int64_t>(pos), "the file ends without its END section; it is truncated");
    if (!haveMeta)
        throw LoadError(path, LoadError::kNoOffset, "section META is missing");
    std::stable_sort(snap.devices.begin(), snap.devices.end(),
                     [](const DeviceData& a, const DeviceData& b) { return a.device < b.device; });
}

} // namespace headroom
