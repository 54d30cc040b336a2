// SPDX-License-Identifier: MIT
#include "core/snapshotimporter.h"

#include "core/loaderror.h"

#include <algorithm>
#include <map>
#include <set>

namespace headroom {

namespace {

using Value = PickleValue;
using Tag = PickleValue::Tag;

class Importer {
public:
    Importer(PickleDocument& doc, Snapshot& snap) : m_doc(doc), m_snap(snap) {}
    void run();

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const
    {
        throw LoadError(m_snap.path, LoadError::kNoOffset, path + ": " + what);
    }
    int64_t intField(Value dict, std::string_view key, const std::string& path, int64_t fallback)
    {
        auto v = m_doc.get(dict, key);
        if (!v || v->tag() == Tag::None)
            return fallback;
        auto i = m_doc.asInt(*v);
        if (!i)
            fail(path + "." + std::string(key), std::string("expected an integer, found ") + m_doc.typeName(*v));
        return *i;
    }
    uint32_t stackField(Value dict, std::string_view key, const std::string& path)
    {
        auto v = m_doc.get(dict, key);
        if (!v)
            return FrameTable::kEmptyStack;
        auto s = m_doc.asStack(*v);
        if (!s)
            fail(path + "." + std::string(key),
                 std::string("expected a list of frames {filename, line, name}, found ") + m_doc.typeName(*v));
        return *s;
    }
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
    void importTraces(Value traces);
    /// A dict of plain values as (key, text) pairs; any other type is ignored (informative only).
    void importTextDict(Value dict, std::vector<std::pair<std::string, std::string>>& out);
    void importAnnotations(Value list);

    PickleDocument& m_doc;
    Snapshot& m_snap;
    std::map<int, DeviceData> m_devices;
    bool m_legacyHistory = false;
    bool m_blockFrames = false;
};

void Importer::run()
{
    const Value root = m_doc.resolve(m_doc.root());
    if (m_doc.isList(root)) {
        m_snap.schemaEra = "1.12 or older (a bare list of segments)";
        importSegments(root, "segments");
    } else if (m_doc.isDict(root)) {
        auto segments = m_doc.get(root, "segments");
        auto traces = m_doc.get(root, "device_traces");
        if (!segments && !traces) {
            std::string keys;
            auto kv = m_doc.items(root);
            for (size_t i = 0; i < kv.size() && i < 20; i += 2)
                keys += (keys.empty() ? "" : ", ") + m_doc.toText(kv[i]);
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
        const TraceEvents& ev = m_doc.events();
        if (m_legacyHistory)
            m_snap.schemaEra = "1.13-2.0 (blocks with history)";
        else if (!ev.compileContext.empty() || !ev.userMetadata.empty())
            m_snap.schemaEra = "2.8+ (compile_context / user_metadata)";
        else if (m_doc.get(root, "external_annotations"))
            m_snap.schemaEra = "2.5+ (external_annotations)";
        else if (m_doc.get(root, "allocator_settings"))
            m_snap.schemaEra = "2.3+ (allocator_settings)";
        else if (ev.anyTime)
            m_snap.schemaEra = "2.2+ (time_us)";
        else if (m_blockFrames)
            m_snap.schemaEra = "2.1+ (frames on blocks)";
        else
            m_snap.schemaEra = "2.0+";
    } else {
        fail("top level", std::string("not a memory snapshot: expected a dict or a list of segments, found ") +
                              m_doc.typeName(root));
    }
    for (auto& [d, data] : m_devices)
        m_snap.devices.push_back(std::move(data));
}

void Importer::importSegments(Value list, const std::string& path)
{
    if (!m_doc.isList(list))
        fail(path, std::string("expected a list of segments, found ") + m_doc.typeName(list));
    auto segs = m_doc.items(list);
    for (size_t i = 0; i < segs.size(); ++i)
        importSegment(segs[i], path + "[" + std::to_string(i) + "]");
}

void Importer::importSegment(Value seg, const std::string& path)
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
        auto ids = m_doc.items(*p);
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
        uint64_t addr = s.address;
        auto items = m_doc.items(*blocks);
        for (size_t j = 0; j < items.size(); ++j) {
            const std::string bpath = path + ".blocks[" + std::to_string(j) + "]";
            Value b = items[j];
            if (!m_doc.isDict(b))
                fail(bpath, std::string("expected a block dict, found ") + m_doc.typeName(b));
            Block blk;
            blk.size = intField(b, "size", bpath, 0);
            blk.address = static_cast<uint64_t>(intField(b, "address", bpath, static_cast<int64_t>(addr)));
            addr = blk.address + static_cast<uint64_t>(blk.size);
            if (auto st = m_doc.get(b, "state")) {
                auto text = m_doc.asString(*st);
                if (!text)
                    fail(bpath + ".state", std::string("expected a string, found ") + m_doc.typeName(*st));
                blk.state = blockStateFromName(*text);
            }
            int64_t requested = intField(b, "requested_size", bpath, 0);
            if (m_doc.get(b, "frames")) {
                m_blockFrames = true;
                blk.stack = stackField(b, "frames", bpath);
            }
            if (auto hist = m_doc.get(b, "history")) {
                m_legacyHistory = true;
                if (!m_doc.isList(*hist))
                    fail(bpath + ".history", std::string("expected a list, found ") + m_doc.typeName(*hist));
                auto h = m_doc.items(*hist);
                if (!h.empty()) {
                    const std::string hpath = bpath + ".history[0]";
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
    }
    s.blockCount = static_cast<uint32_t>(dev.blocks.size() - s.firstBlock);
    dev.segments.push_back(s);
}

void Importer::importTraces(Value traces)
{
    if (!m_doc.isList(traces))
        fail("device_traces", std::string("expected a list with one trace list per device, found ") +
                                  m_doc.typeName(traces));
    TraceEvents& all = m_doc.events();
    auto lists = m_doc.items(traces);
    for (size_t d = 0; d < lists.size(); ++d) {
        const std::string path = "device_traces[" + std::to_string(d) + "]";
        if (!m_doc.isList(lists[d]))
            fail(path, std::string("expected a list of trace entries, found ") + m_doc.typeName(lists[d]));
        auto entries = m_doc.items(lists[d]);
        if (entries.empty())
            continue;
        std::vector<uint32_t> idx;
        idx.reserve(entries.size());
        for (size_t i = 0; i < entries.size(); ++i) {
            Value e = m_doc.resolve(entries[i]);
            if (e.tag() != Tag::Event)
                fail(path + "[" + std::to_string(i) + "]",
                     std::string("expected a trace entry dict with an 'action' string, found ") + m_doc.typeName(e));
            idx.push_back(static_cast<uint32_t>(e.payload()));
        }
        DeviceData& dev = device(static_cast<int>(d));
        TraceEvents& out = dev.trace;
        const bool wholeStore = idx.size() == all.count() && idx.front() == 0 &&
                                std::is_sorted(idx.begin(), idx.end()) && idx.back() == idx.size() - 1;
        std::map<uint32_t, uint64_t> countsByString;
        const auto& actionStrings = m_doc.eventActionString();
        for (uint32_t i : idx)
            ++countsByString[actionStrings[i]];
        for (auto& [sid, n] : countsByString)
            dev.actionCounts[std::string(m_doc.string(sid))] += n;
        const bool sortedIdx = std::is_sorted(idx.begin(), idx.end());
        auto localIndex = [&](uint32_t ev) -> int64_t {
            if (sortedIdx) {
                auto it = std::lower_bound(idx.begin(), idx.end(), ev);
                return (it != idx.end() && *it == ev) ? it - idx.begin() : -1;
            }
            auto it = std::find(idx.begin(), idx.end(), ev);
            return it != idx.end() ? it - idx.begin() : -1;
        };
        auto remapSparse = [&](const auto& src, auto& dst) {
            for (auto [ev, val] : src)
                if (const int64_t k = localIndex(ev); k >= 0)
                    dst.emplace_back(static_cast<uint32_t>(k), val);
        };
        if (wholeStore) {
            out = std::move(all);
            all = TraceEvents{};
        } else {
            out.reserve(idx.size());
            for (uint32_t i : idx)
                out.append({all.action[i], all.addr[i], all.size[i], all.stream[i], all.timeUs[i], all.stack[i]});
            out.anyTime = std::any_of(out.timeUs.begin(), out.timeUs.end(),
                                      [](int64_t t) { return t != TraceEvents::kNoTime; });
            remapSparse(all.deviceFree, out.deviceFree);
            remapSparse(all.compileContext, out.compileContext);
            remapSparse(all.userMetadata, out.userMetadata);
        }
        for (size_t i = 0; i < out.count(); ++i) {
            if (out.action[i] != TraceAction::Oom)
                continue;
            OomEvent o;
            o.eventIndex = static_cast<int64_t>(i);
            o.size = out.size[i];
            auto it = std::lower_bound(out.deviceFree.begin(), out.deviceFree.end(),
                                       std::pair<uint32_t, int64_t>(static_cast<uint32_t>(i), INT64_MIN));
            if (it != out.deviceFree.end() && it->first == i)
                o.deviceFree = it->second;
            dev.ooms.push_back(o);
        }
    }
}

void Importer::importTextDict(Value dict, std::vector<std::pair<std::string, std::string>>& out)
{
    if (!m_doc.isDict(dict))
        return; // informative only; an odd type is not worth refusing the file
    auto kv = m_doc.items(dict);
    for (size_t i = 0; i + 1 < kv.size(); i += 2)
        out.emplace_back(m_doc.toText(kv[i]), m_doc.toText(kv[i + 1]));
}

void Importer::importAnnotations(Value list)
{
    if (!m_doc.isList(list))
        fail("external_annotations", std::string("expected a list, found ") + m_doc.typeName(list));
    auto items = m_doc.items(list);
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

} // namespace

void SnapshotImporter::import(PickleDocument& doc, Snapshot& snapshot)
{
    Importer(doc, snapshot).run();
}

} // namespace headroom
