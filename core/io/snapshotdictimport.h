// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"
#include "core/util/loaderror.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// The snapshot dict of docs/formats.md ("Snapshot schema eras" (every schema era, every key optional, or the
/// 1.12-era bare list of segments) read into the Snapshot model: the segments and blocks,
/// the legacy `history`, the annotations, the settings and the schema-era ladder. One
/// implementation for every document type the snapshot comes in (the pickle reader's
/// PickleDocument, nlohmann::json), so a pickle and its JSON rendition cannot be read by
/// different rules. Only the trace entries are the document's own (Doc::importTrace): the
/// pickle reader stores them as flat arrays while parsing, JSON has them as objects.
///
/// A template over a document accessor rather than a virtual interface: the accessors are
/// inlined, and a JSON trace entry (read by the accessor's own loop) costs no virtual call.
/// Type errors name the path inside the document, e.g.
/// `segments[3].blocks[0].size: expected an integer, found str`.
///
/// `Doc` provides, for its cheap-to-copy `Doc::Value`:
///   bool isList(Value), isDict(Value), isNull(Value);
///   items(Value list) -> a range with size(), empty() and operator[] giving Values;
///   std::optional<Value> get(Value dict, std::string_view key);
///   std::optional<int64_t> asInt(Value);          (the format's integer rule)
///   std::optional<std::string_view> asString(Value);
///   std::optional<bool> asBool(Value);
///   std::optional<uint32_t> asStack(importer, Value, path, key); (the frames value at
///                                           path.key; None/null = the empty stack)
///   std::string toText(Value); const char* typeName(Value);  (Python's type names)
///   forEachItem(Value dict, f): f(std::string key, Value value) per item;
///   importTrace(importer, Value list, DeviceData&, path): one device's trace entries;
///   bool sawTime(), sawCompileContext(): after the traces, for the era ladder.
template <class Doc>
class SnapshotDictImport {
public:
    using Value = typename Doc::Value;

    SnapshotDictImport(Doc& doc, Snapshot& snap) : m_doc(doc), m_snap(snap) {}

    /// Reads `root` and appends the devices it names to the snapshot, by device ordinal.
    void run(Value root);

    [[noreturn]] void fail(const std::string& path, const std::string& what) const
    {
        throw LoadError(m_snap.path, LoadError::kNoOffset, path + ": " + what);
    }
    /// `dict[key]` as an integer; `fallback` when absent or None/null. `path` is the dict's.
    int64_t intField(Value dict, std::string_view key, const std::string& path, int64_t fallback)
    {
        const auto v = m_doc.get(dict, key);
        if (!v || m_doc.isNull(*v))
            return fallback;
        const auto i = m_doc.asInt(*v);
        if (!i)
            fail(path + "." + std::string(key), std::string("expected an integer, found ") + m_doc.typeName(*v));
        return *i;
    }
    /// `dict[key]` as an interned stack; the empty stack when absent.
    uint32_t stackField(Value dict, std::string_view key, const std::string& path)
    {
        const auto v = m_doc.get(dict, key);
        if (!v)
            return FrameTable::kEmptyStack;
        const auto s = m_doc.asStack(*this, *v, path, key);
        if (!s)
            fail(path + "." + std::string(key),
                 std::string("expected a list of frames {filename, line, name}, found ") + m_doc.typeName(*v));
        return *s;
    }
    Snapshot& snapshot() { return m_snap; }

private:
    DeviceData& device(int d)
    {
        auto it = m_devices.find(d);
        if (it == m_devices.end()) {
            it = m_devices.emplace(d, DeviceData{}).first;
            it->second.device = d;
        }
        return it->second;
    }
    void importSegments(Value list, const std::string& path);
    void importSegment(Value seg, const std::string& path);
    void importBlock(Value b, const std::string& path, uint64_t& addr, DeviceData& dev);
    void importTraces(Value traces);
    /// A dict of plain values as (key, text) pairs; any other type is ignored (informative only).
    void importTextDict(Value dict, std::vector<std::pair<std::string, std::string>>& out);
    void importAnnotations(Value list);
    void setSchemaEra(Value root);

    Doc& m_doc;
    Snapshot& m_snap;
    std::map<int, DeviceData> m_devices;
    bool m_legacyHistory = false;
    bool m_blockFrames = false;
};

template <class Doc>
void SnapshotDictImport<Doc>::run(Value root)
{
    if (m_doc.isList(root)) {
        m_snap.schemaEra = "1.12 or older (a bare list of segments)";
        importSegments(root, "segments");
    } else if (m_doc.isDict(root)) {
        const auto segments = m_doc.get(root, "segments");
        const auto traces = m_doc.get(root, "device_traces");
        if (!segments && !traces) {
            std::string keys;
            int listed = 0;
            m_doc.forEachItem(root, [&](std::string key, Value) {
                if (listed++ < 10)
                    keys += (keys.empty() ? "" : ", ") + key;
            });
            fail("top level", "not a memory snapshot: expected a dict with 'segments' and 'device_traces', found "
                              "a dict with keys {" + keys + "}");
        }
        if (segments)
            importSegments(*segments, "segments");
        if (traces)
            importTraces(*traces);
        if (auto s = m_doc.get(root, "allocator_settings"))
            importTextDict(*s, m_snap.allocatorSettings);
        if (auto s = m_doc.get(root, "headroom_config"))
            importTextDict(*s, m_snap.runConfig);
        if (auto a = m_doc.get(root, "external_annotations"))
            importAnnotations(*a);
        setSchemaEra(root);
    } else {
        fail("top level", std::string("not a memory snapshot: expected a dict or a list of segments, found ") +
                              m_doc.typeName(root));
    }
    for (auto& [d, data] : m_devices)
        m_snap.devices.push_back(std::move(data));
}

template <class Doc>
void SnapshotDictImport<Doc>::setSchemaEra(Value root)
{
    // Newer files keep the keys of older eras, so the newest marker is asked first
    // (docs/formats.md, "Snapshot schema eras"); the 1.13-2.0 block `history` is the exception: only those files have it.
    if (m_legacyHistory)
        m_snap.schemaEra = "1.13-2.0 (blocks with history)";
    else if (m_doc.sawCompileContext())
        m_snap.schemaEra = "2.8+ (compile_context / user_metadata)";
    else if (m_doc.get(root, "external_annotations"))
        m_snap.schemaEra = "2.5+ (external_annotations)";
    else if (m_doc.get(root, "allocator_settings"))
        m_snap.schemaEra = "2.3+ (allocator_settings)";
    else if (m_doc.sawTime())
        m_snap.schemaEra = "2.2+ (time_us)";
    else if (m_blockFrames)
        m_snap.schemaEra = "2.1+ (frames on blocks)";
    else
        m_snap.schemaEra = "2.0+";
}

template <class Doc>
void SnapshotDictImport<Doc>::importSegments(Value list, const std::string& path)
{
    if (!m_doc.isList(list))
        fail(path, std::string("expected a list of segments, found ") + m_doc.typeName(list));
    const auto segs = m_doc.items(list);
    for (size_t i = 0; i < segs.size(); ++i)
        importSegment(segs[i], path + "[" + std::to_string(i) + "]");
}

template <class Doc>
void SnapshotDictImport<Doc>::importSegment(Value seg, const std::string& path)
{
    if (!m_doc.isDict(seg))
        fail(path, std::string("expected a segment dict, found ") + m_doc.typeName(seg));
    Segment s;
    s.device = static_cast<int>(intField(seg, "device", path, 0));
    s.address = static_cast<uint64_t>(intField(seg, "address", path, 0));
    s.totalSize = intField(seg, "total_size", path, 0);
    s.allocatedSize = intField(seg, "allocated_size", path, 0);
    s.activeSize = intField(seg, "active_size", path, 0);
    s.requestedSize = intField(seg, "requested_size", path, 0);
    s.stream = intField(seg, "stream", path, 0);
    if (auto t = m_doc.get(seg, "segment_type"))
        s.largePool = m_doc.asString(*t).value_or("large") != "small";
    if (auto e = m_doc.get(seg, "is_expandable"))
        s.expandable = m_doc.asBool(*e).value_or(false);
    if (auto p = m_doc.get(seg, "segment_pool_id"); p && m_doc.isList(*p)) {
        // Informative (which private pool): an odd element reads as 0 rather than refusing the file.
        const auto ids = m_doc.items(*p);
        if (ids.size() >= 2)
            s.poolId = {m_doc.asInt(ids[0]).value_or(0), m_doc.asInt(ids[1]).value_or(0)};
    }
    s.stack = stackField(seg, "frames", path);
    if (s.device < 0 || s.device > 1 << 16)
        fail(path + ".device", "expected a device ordinal, found " + std::to_string(s.device));

    DeviceData& dev = device(s.device);
    s.firstBlock = static_cast<uint32_t>(dev.blocks.size());
    if (auto blocks = m_doc.get(seg, "blocks")) {
        if (!m_doc.isList(*blocks))
            fail(path + ".blocks", std::string("expected a list of blocks, found ") + m_doc.typeName(*blocks));
        uint64_t addr = s.address; // blocks without an address follow each other from the segment's
        const auto items = m_doc.items(*blocks);
        for (size_t j = 0; j < items.size(); ++j)
            importBlock(items[j], path + ".blocks[" + std::to_string(j) + "]", addr, dev);
    }
    s.blockCount = static_cast<uint32_t>(dev.blocks.size() - s.firstBlock);
    dev.segments.push_back(s);
}

template <class Doc>
void SnapshotDictImport<Doc>::importBlock(Value b, const std::string& path, uint64_t& addr, DeviceData& dev)
{
    if (!m_doc.isDict(b))
        fail(path, std::string("expected a block dict, found ") + m_doc.typeName(b));
    Block blk;
    blk.size = intField(b, "size", path, 0);
    blk.address = static_cast<uint64_t>(intField(b, "address", path, static_cast<int64_t>(addr)));
    addr = blk.address + static_cast<uint64_t>(blk.size);
    if (auto st = m_doc.get(b, "state")) {
        const auto text = m_doc.asString(*st);
        if (!text)
            fail(path + ".state", std::string("expected a string, found ") + m_doc.typeName(*st));
        blk.state = blockStateFromName(*text);
    }
    int64_t requested = intField(b, "requested_size", path, 0);
    if (m_doc.get(b, "frames")) {
        m_blockFrames = true;
        blk.stack = stackField(b, "frames", path);
    }
    if (auto hist = m_doc.get(b, "history")) {
        // 1.13-2.0: the request size and the stack live in the block's first history entry.
        m_legacyHistory = true;
        if (!m_doc.isList(*hist))
            fail(path + ".history", std::string("expected a list, found ") + m_doc.typeName(*hist));
        const auto h = m_doc.items(*hist);
        if (!h.empty()) {
            const std::string hpath = path + ".history[0]";
            if (!m_doc.isDict(h[0]))
                fail(hpath, std::string("expected a dict, found ") + m_doc.typeName(h[0]));
            if (requested == 0)
                requested = intField(h[0], "real_size", hpath, 0);
            if (blk.stack == 0) {
                blk.stack = stackField(h[0], "frames", hpath);
                if (blk.stack == 0)
                    blk.stack = stackField(h[0], "cpp_frames", hpath);
            }
        }
    }
    blk.requestedSize = requested != 0 ? requested : blk.size;
    dev.blocks.push_back(blk);
}

template <class Doc>
void SnapshotDictImport<Doc>::importTraces(Value traces)
{
    if (!m_doc.isList(traces))
        fail("device_traces", std::string("expected a list with one trace list per device, found ") +
                                  m_doc.typeName(traces));
    const auto lists = m_doc.items(traces);
    for (size_t d = 0; d < lists.size(); ++d) {
        const std::string path = "device_traces[" + std::to_string(d) + "]";
        if (!m_doc.isList(lists[d]))
            fail(path, std::string("expected a list of trace entries, found ") + m_doc.typeName(lists[d]));
        if (m_doc.items(lists[d]).empty())
            continue; // no device entry for an unused ordinal
        m_doc.importTrace(*this, lists[d], device(static_cast<int>(d)), path);
    }
}

template <class Doc>
void SnapshotDictImport<Doc>::importTextDict(Value dict, std::vector<std::pair<std::string, std::string>>& out)
{
    if (!m_doc.isDict(dict))
        return; // informative only; an odd type is not worth refusing the file
    m_doc.forEachItem(dict, [&](std::string key, Value v) { out.emplace_back(std::move(key), m_doc.toText(v)); });
}

template <class Doc>
void SnapshotDictImport<Doc>::importAnnotations(Value list)
{
    if (!m_doc.isList(list))
        fail("external_annotations", std::string("expected a list, found ") + m_doc.typeName(list));
    const auto items = m_doc.items(list);
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string path = "external_annotations[" + std::to_string(i) + "]";
        if (!m_doc.isDict(items[i]))
            fail(path, std::string("expected a dict, found ") + m_doc.typeName(items[i]));
        Annotation a;
        if (auto n = m_doc.get(items[i], "name"))
            a.name = std::string(m_doc.asString(*n).value_or(""));
        if (auto s = m_doc.get(items[i], "stage"))
            a.start = m_doc.asString(*s).value_or("START") != "END";
        a.device = static_cast<int>(intField(items[i], "device", path, 0));
        a.timeUs = intField(items[i], "time_us", path, 0);
        m_snap.annotations.push_back(std::move(a));
    }
}

} // namespace headroom
