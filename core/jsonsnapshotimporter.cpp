// SPDX-License-Identifier: MIT
#include "core/jsonsnapshotimporter.h"

#include "core/jsoninteger.h"
#include "core/loaderror.h"

#include <algorithm>
#include <map>

namespace headroom {

namespace {

using json = nlohmann::json;

const char* typeName(const json& v)
{
    switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "int";
    case json::value_t::number_float: return "float";
    case json::value_t::string: return "str";
    case json::value_t::array: return "list";
    case json::value_t::object: return "dict";
    default: return "value";
    }
}

class Importer {
public:
    explicit Importer(Snapshot& snap) : m_snap(snap) {}
    void run(const json& root);

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const
    {
        throw LoadError(m_snap.path, LoadError::kNoOffset, path + ": " + what);
    }
    /// The snapshot rule (jsonrules::kSnapshot): what the pickle path accepts.
    int64_t toInt(const json& v, const std::string& path) const
    {
        const JsonInt r = jsonInteger(v, jsonrules::kSnapshot);
        if (!r.ok())
            fail(path, std::string("expected an integer, found ") + typeName(v));
        return r.value;
    }
    int64_t intField(const json& obj, const char* key, const std::string& path, int64_t fallback) const
    {
        auto it = obj.find(key);
        if (it == obj.end() || it->is_null())
            return fallback;
        return toInt(*it, path + "." + key);
    }
    uint32_t stackOf(const json& v, const std::string& path)
    {
        if (v.is_null())
            return FrameTable::kEmptyStack;
        if (!v.is_array())
            fail(path, std::string("expected a list of frames {filename, line, name}, found ") + typeName(v));
        m_ids.clear();
        for (size_t i = 0; i < v.size(); ++i) {
            const json& f = v[i];
            if (f.is_string()) { // 2.0-era cpp_frames: pre-formatted strings
                m_ids.push_back(m_snap.frames.internFrame("", 0, f.get_ref<const std::string&>()));
                continue;
            }
            const std::string fpath = path + "[" + std::to_string(i) + "]";
            if (!f.is_object())
                fail(fpath, std::string("expected a frame {filename, line, name}, found ") + typeName(f));
            auto fn = f.find("filename");
            auto nm = f.find("name");
            const std::string empty;
            const std::string& file = fn != f.end() && fn->is_string() ? fn->get_ref<const std::string&>() : empty;
            const std::string& name = nm != f.end() && nm->is_string() ? nm->get_ref<const std::string&>() : empty;
            m_ids.push_back(m_snap.frames.internFrame(file, intField(f, "line", fpath, 0), name));
        }
        return m_snap.frames.internStack(m_ids);
    }
    uint32_t stackField(const json& obj, const char* key, const std::string& path)
    {
        auto it = obj.find(key);
        return it == obj.end() ? FrameTable::kEmptyStack : stackOf(*it, path + "." + key);
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
    void importSegment(const json& seg, const std::string& path);
    void importTrace(const json& list, int d, const std::string& path);

    Snapshot& m_snap;
    std::map<int, DeviceData> m_devices;
    std::vector<uint32_t> m_ids;
    bool m_legacyHistory = false;
    bool m_blockFrames = false;
    bool m_anyTime = false;
    bool m_compile = false;
};

void Importer::run(const json& root)
{
    const json* segments = nullptr;
    if (root.is_array()) {
        m_snap.schemaEra = "1.12 or older (a bare list of segments)";
        segments = &root;
    } else if (root.is_object()) {
        if (auto it = root.find("segments"); it != root.end())
            segments = &*it;
    } else {
        fail("top level", std::string("not a memory snapshot: expected a dict or a list of segments, found ") +
                              typeName(root));
    }
    if (segments) {
        if (!segments->is_array())
            fail("segments", std::string("expected a list of segments, found ") + typeName(*segments));
        for (size_t i = 0; i < segments->size(); ++i)
            importSegment((*segments)[i], "segments[" + std::to_string(i) + "]");
    }
    if (root.is_object()) {
        if (auto it = root.find("device_traces"); it != root.end()) {
            if (!it->is_array())
                fail("device_traces",
                     std::string("expected a list with one trace list per device, found ") + typeName(*it));
            for (size_t d = 0; d < it->size(); ++d)
                importTrace((*it)[d], static_cast<int>(d), "device_traces[" + std::to_string(d) + "]");
        }
        for (auto [key, out] : {std::pair{"allocator_settings", &m_snap.allocatorSettings},
                                std::pair{"headroom_config", &m_snap.runConfig}})
            if (auto it = root.find(key); it != root.end() && it->is_object())
                for (auto kv = it->begin(); kv != it->end(); ++kv)
                    out->emplace_back(kv.key(), kv->is_string() ? kv->get<std::string>() : kv->dump());
        if (auto it = root.find("external_annotations"); it != root.end()) {
            if (!it->is_array())
                fail("external_annotations", std::string("expected a list, found ") + typeName(*it));
            for (size_t i = 0; i < it->size(); ++i) {
                const json& a = (*it)[i];
                const std::string path = "external_annotations[" + std::to_string(i) + "]";
                if (!a.is_object())
                    fail(path, std::string("expected a dict, found ") + typeName(a));
                Annotation ann;
                if (auto n = a.find("name"); n != a.end() && n->is_string())
                    ann.name = n->get<std::string>();
                if (auto s = a.find("stage"); s != a.end() && s->is_string())
                    ann.start = s->get<std::string>() != "END";
                ann.device = static_cast<int>(intField(a, "device", path, 0));
                ann.timeUs = intField(a, "time_us", path, 0);
                m_snap.annotations.push_back(std::move(ann));
            }
        }
        if (m_legacyHistory)
            m_snap.schemaEra = "1.13-2.0 (blocks with history)";
        else if (m_compile)
            m_snap.schemaEra = "2.8+ (compile_context / user_metadata)";
        else if (root.contains("external_annotations"))
            m_snap.schemaEra = "2.5+ (external_annotations)";
        else if (root.contains("allocator_settings"))
            m_snap.schemaEra = "2.3+ (allocator_settings)";
        else if (m_anyTime)
            m_snap.schemaEra = "2.2+ (time_us)";
        else if (m_blockFrames)
            m_snap.schemaEra = "2.1+ (frames on blocks)";
        else
            m_snap.schemaEra = "2.0+";
    }
    for (auto& [d, data] : m_devices) {
        data.sourceFormat = "snapshot (JSON)";
        data.sourceFile = m_snap.path;
        m_snap.devices.push_back(std::move(data));
    }
}

void Importer::importSegment(const json& seg, const std::string& path)
{
    if (!seg.is_object())
        fail(path, std::string("expected a segment dict, found ") + typeName(seg));
    Segment s;
    s.device = static_cast<int>(intField(seg, "device", path, 0));
    s.address = static_cast<uint64_t>(intField(seg, "address", path, 0));
    s.totalSize = intField(seg, "total_size", path, 0);
    s.allocatedSize = intField(seg, "allocated_size", path, 0);
    s.activeSize = intField(seg, "active_size", path, 0);
    s.requestedSize = intField(seg, "requested_size", path, 0);
    s.stream = intField(seg, "stream", path, 0);
    if (auto t = seg.find("segment_type"); t != seg.end() && t->is_string())
        s.largePool = t->get<std::string>() != "small";
    if (auto e = seg.find("is_expandable"); e != seg.end() && e->is_boolean())
        s.expandable = e->get<bool>();
    if (auto p = seg.find("segment_pool_id"); p != seg.end() && p->is_array() && p->size() >= 2)
        s.poolId = {toInt((*p)[0], path + ".segment_pool_id[0]"), toInt((*p)[1], path + ".segment_pool_id[1]")};
    s.stack = stackField(seg, "frames", path);
    if (s.device < 0 || s.device > 1 << 16)
        fail(path + ".device", "expected a device ordinal, found " + std::to_string(s.device));

    DeviceData& dev = device(s.device);
    s.firstBlock = static_cast<uint32_t>(dev.blocks.size());
    if (auto blocks = seg.find("blocks"); blocks != seg.end()) {
        if (!blocks->is_array())
            fail(path + ".blocks", std::string("expected a list of blocks, found ") + typeName(*blocks));
        uint64_t addr = s.address;
        for (size_t j = 0; j < blocks->size(); ++j) {
            const std::string bpath = path + ".blocks[" + std::to_string(j) + "]";
            const json& b = (*blocks)[j];
            if (!b.is_object())
                fail(bpath, std::string("expected a block dict, found ") + typeName(b));
            Block blk;
            blk.size = intField(b, "size", bpath, 0);
            blk.address = static_cast<uint64_t>(intField(b, "address", bpath, static_cast<int64_t>(addr)));
            addr = blk.address + static_cast<uint64_t>(blk.size);
            if (auto st = b.find("state"); st != b.end()) {
                if (!st->is_string())
                    fail(bpath + ".state", std::string("expected a string, found ") + typeName(*st));
                blk.state = blockStateFromName(st->get_ref<const std::string&>());
            }
            int64_t requested = intField(b, "requested_size", bpath, 0);
            if (b.contains("frames")) {
                m_blockFrames = true;
                blk.stack = stackField(b, "frames", bpath);
            }
            if (auto hist = b.find("history"); hist != b.end()) {
                m_legacyHistory = true;
                if (!hist->is_array())
                    fail(bpath + ".history", std::string("expected a list, found ") + typeName(*hist));
                if (!hist->empty()) {
                    const std::string hpath = bpath + ".history[0]";
                    const json& h = (*hist)[0];
                    if (!h.is_object())
                        fail(hpath, std::string("expected a dict, found ") + typeName(h));
                    if (requested == 0)
                        requested = intField(h, "real_size", hpath, 0);
                    if (blk.stack == 0) {
                        blk.stack = stackField(h, "frames", hpath);
                        if (blk.stack == 0)
                            blk.stack = stackField(h, "cpp_frames", hpath);
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

void Importer::importTrace(const json& list, int d, const std::string& path)
{
    if (!list.is_array())
        fail(path, std::string("expected a list of trace entries, found ") + typeName(list));
    if (list.empty())
        return;
    DeviceData& dev = device(d);
    TraceEvents& out = dev.trace;
    out.reserve(list.size());
    bool anyCategory = false;
    std::vector<uint8_t> categories;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string epath = path + "[" + std::to_string(i) + "]";
        const json& e = list[i];
        auto act = e.is_object() ? e.find("action") : e.end();
        if (!e.is_object() || act == e.end() || !act->is_string())
            fail(epath, std::string("expected a trace entry dict with an 'action' string, found ") + typeName(e));
        const std::string& action = act->get_ref<const std::string&>();
        ++dev.actionCounts[action];
        const auto idx = static_cast<uint32_t>(out.count());
        TraceEvents::Entry entry;
        entry.action = actionFromName(action);
        entry.addr = static_cast<uint64_t>(intField(e, "addr", epath, 0));
        entry.size = intField(e, "size", epath, 0);
        entry.stream = intField(e, "stream", epath, 0);
        entry.timeUs = intField(e, "time_us", epath, TraceEvents::kNoTime);
        if (entry.timeUs != TraceEvents::kNoTime)
            out.anyTime = m_anyTime = true;
        entry.stack = stackField(e, "frames", epath);
        out.append(entry);
        if (e.contains("device_free"))
            out.deviceFree.emplace_back(idx, intField(e, "device_free", epath, 0));
        if (auto c = e.find("compile_context"); c != e.end() && c->is_string()) {
            m_compile = true;
            out.compileContext.emplace_back(idx, m_snap.frames.strings().intern(c->get_ref<const std::string&>()));
        }
        if (auto u = e.find("user_metadata"); u != e.end() && u->is_string()) {
            m_compile = true;
            out.userMetadata.emplace_back(idx, m_snap.frames.strings().intern(u->get_ref<const std::string&>()));
        }
        TensorCategory cat = TensorCategory::Unknown;
        if (auto c = e.find("category"); c != e.end() && c->is_string()) {
            anyCategory = true;
            cat = categoryFromName(c->get_ref<const std::string&>()).value_or(TensorCategory::Unknown);
        }
        categories.push_back(static_cast<uint8_t>(cat));
        if (entry.action == TraceAction::Oom) {
            OomEvent o;
            o.eventIndex = idx;
            o.size = entry.size;
            o.deviceFree = intField(e, "device_free", epath, 0);
            dev.ooms.push_back(o);
        }
    }
    if (anyCategory)
        out.category = std::move(categories);
}

} // namespace

bool JsonSnapshotImporter::accepts(const nlohmann::json& root)
{
    return root.is_object() && (root.contains("segments") || root.contains("device_traces"));
}

void JsonSnapshotImporter::import(const nlohmann::json& root, Snapshot& snapshot)
{
    Importer(snapshot).run(root);
}

} // namespace headroom
