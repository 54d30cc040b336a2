// SPDX-License-Identifier: MIT
#include "core/io/jsonsnapshotimporter.h"

#include "core/io/jsoninteger.h"
#include "core/io/recordedtensorreader.h"
#include "core/io/snapshotdictimport.h"

namespace headroom {

namespace {

/// readRecordedTensor's document accessor over nlohmann::json.
struct JsonTensorDoc {
    using Value = const nlohmann::json*;
    bool isDict(Value v) const { return v->is_object(); }
    bool isList(Value v) const { return v->is_array(); }
    std::optional<Value> get(Value v, std::string_view key) const
    {
        const auto it = v->find(std::string(key));
        return it == v->end() || it->is_null() ? std::nullopt : std::optional<Value>(&*it);
    }
    std::vector<Value> items(Value v) const
    {
        std::vector<Value> out;
        for (const auto& x : *v)
            out.push_back(&x);
        return out;
    }
    std::optional<int64_t> asInt(Value v) const
    {
        return v->is_number_integer() ? std::optional<int64_t>(v->get<int64_t>()) : std::nullopt;
    }
    std::optional<std::string_view> asString(Value v) const
    {
        return v->is_string() ? std::optional<std::string_view>(v->get_ref<const std::string&>()) : std::nullopt;
    }
};

using json = nlohmann::json;

/// An nlohmann::json document as SnapshotDictImport reads it, with Python's type names in
/// messages so an error reads the same as for the pickle. Unlike the pickle reader, which
/// stores trace entries while parsing, the entries are read here (importTrace).
class JsonDictAccess {
public:
    using Value = const json*;

    /// A list's items as Values; empty for anything else.
    struct Items {
        const json* list;
        size_t size() const { return list->is_array() ? list->size() : 0; }
        bool empty() const { return size() == 0; }
        const json* operator[](size_t i) const { return &(*list)[i]; }
    };

    bool isList(Value v) const { return v->is_array(); }
    bool isDict(Value v) const { return v->is_object(); }
    bool isNull(Value v) const { return v->is_null(); }
    Items items(Value v) const { return {v}; }
    std::optional<Value> get(Value dict, std::string_view key) const
    {
        auto it = dict->find(key);
        return it == dict->end() ? std::nullopt : std::optional<Value>(&*it);
    }
    std::optional<int64_t> asInt(Value v) const
    {
        const JsonInt r = jsonInteger(*v, jsonrules::kSnapshot);
        return r.ok() ? std::optional<int64_t>(r.value) : std::nullopt;
    }
    std::optional<std::string_view> asString(Value v) const
    {
        return v->is_string() ? std::optional<std::string_view>(v->get_ref<const std::string&>()) : std::nullopt;
    }
    std::optional<bool> asBool(Value v) const { return v->is_boolean() ? std::optional<bool>(v->get<bool>()) : std::nullopt; }
    /// `dict[key]` when it is a string (the optional text fields: other types are ignored).
    std::optional<std::string_view> stringField(Value dict, std::string_view key) const
    {
        const auto v = get(dict, key);
        return v ? asString(*v) : std::nullopt;
    }
    template <class Import>
    std::optional<uint32_t> asStack(Import& imp, Value v, const std::string& path, std::string_view key);
    std::string toText(Value v) const { return v->is_string() ? v->get<std::string>() : v->dump(); }
    const char* typeName(Value v) const;
    template <class F>
    void forEachItem(Value dict, F&& f) const
    {
        for (auto kv = dict->begin(); kv != dict->end(); ++kv)
            f(kv.key(), &kv.value());
    }
    template <class Import>
    void importTrace(Import& imp, Value list, DeviceData& dev, const std::string& path);
    bool sawTime() const { return m_anyTime; }
    bool sawCompileContext() const { return m_compile; }

private:
    std::vector<uint32_t> m_ids; // frame ids of the stack being read, reused
    bool m_anyTime = false;
    bool m_compile = false;
};

const char* JsonDictAccess::typeName(Value v) const
{
    switch (v->type()) {
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

template <class Import>
std::optional<uint32_t> JsonDictAccess::asStack(Import& imp, Value v, const std::string& path, std::string_view key)
{
    if (v->is_null())
        return FrameTable::kEmptyStack;
    if (!v->is_array())
        return std::nullopt;
    FrameTable& frames = imp.snapshot().frames;
    m_ids.clear();
    for (size_t i = 0; i < v->size(); ++i) {
        const json& f = (*v)[i];
        if (f.is_string()) { // 2.0-era cpp_frames: pre-formatted strings
            m_ids.push_back(frames.internFrame("", 0, f.get_ref<const std::string&>()));
            continue;
        }
        const std::string fpath = path + "." + std::string(key) + "[" + std::to_string(i) + "]";
        if (!f.is_object())
            imp.fail(fpath, std::string("expected a frame {filename, line, name}, found ") + typeName(&f));
        const std::string_view file = stringField(&f, "filename").value_or("");
        const std::string_view name = stringField(&f, "name").value_or("");
        m_ids.push_back(frames.internFrame(file, imp.intField(&f, "line", fpath, 0), name));
        const FxFrameText fx{stringField(&f, "fx_node_op").value_or(""), stringField(&f, "fx_node_name").value_or(""),
                             stringField(&f, "fx_node_target").value_or(""),
                             stringField(&f, "fx_original_trace").value_or("")};
        if (!fx.empty())
            frames.setFx(m_ids.back(), fx);
    }
    return frames.internStack(m_ids);
}

template <class Import>
void JsonDictAccess::importTrace(Import& imp, Value list, DeviceData& dev, const std::string& path)
{
    TraceEvents& out = dev.trace;
    out.reserve(list->size());
    bool anyCategory = false;
    std::vector<uint8_t> categories;
    StringPool& strings = imp.snapshot().frames.strings();
    for (size_t i = 0; i < list->size(); ++i) {
        const std::string epath = path + "[" + std::to_string(i) + "]";
        const json* e = &(*list)[i];
        const auto act = get(e, "action");
        if (!e->is_object() || !act || !(*act)->is_string())
            imp.fail(epath, std::string("expected a trace entry dict with an 'action' string, found ") + typeName(e));
        const std::string& action = (*act)->get_ref<const std::string&>();
        ++dev.actionCounts[action];
        const auto idx = static_cast<uint32_t>(out.count());
        TraceEvents::Entry entry;
        entry.action = actionFromName(action);
        entry.addr = static_cast<uint64_t>(imp.intField(e, "addr", epath, 0));
        entry.size = imp.intField(e, "size", epath, 0);
        entry.stream = imp.intField(e, "stream", epath, 0);
        entry.timeUs = imp.intField(e, "time_us", epath, TraceEvents::kNoTime);
        if (entry.timeUs != TraceEvents::kNoTime)
            out.anyTime = m_anyTime = true;
        entry.stack = imp.stackField(e, "frames", epath);
        out.append(entry);
        if (get(e, "device_free"))
            out.deviceFree.emplace_back(idx, imp.intField(e, "device_free", epath, 0));
        if (auto c = stringField(e, "compile_context")) {
            m_compile = true;
            out.compileContext.emplace_back(idx, strings.intern(*c));
        }
        if (auto u = stringField(e, "user_metadata")) {
            m_compile = true;
            out.userMetadata.emplace_back(idx, strings.intern(*u));
        }
        if (const auto f = e->find("forward_frames"); f != e->end() && f->is_array()) {
            std::string text;
            for (const json& line : *f)
                if (line.is_string()) {
                    if (!text.empty() && text.back() != '\n')
                        text += '\n';
                    text += line.get_ref<const std::string&>();
                }
            if (!text.empty())
                out.forwardFrames.emplace_back(idx, strings.intern(text));
        }
        if (const auto p = e->find("pool_id"); p != e->end() && p->is_array() && p->size() == 2
                                                && (*p)[0].is_number_integer() && (*p)[1].is_number_integer()) {
            const std::pair<int64_t, int64_t> id{(*p)[0].get<int64_t>(), (*p)[1].get<int64_t>()};
            if (id != std::pair<int64_t, int64_t>{0, 0})
                out.poolIds.emplace_back(idx, id);
        }
        if (const auto t = e->find("headroom_tensor"); t != e->end())
            if (auto rec = readRecordedTensor(JsonTensorDoc{}, &*t, strings))
                out.tensors.emplace_back(idx, std::move(*rec));
        // `_profile_to_snapshot` writes the profiler's exact category on each entry.
        TensorCategory cat = TensorCategory::Unknown;
        if (auto c = stringField(e, "category")) {
            anyCategory = true;
            cat = categoryFromName(*c).value_or(TensorCategory::Unknown);
        }
        categories.push_back(static_cast<uint8_t>(cat));
        if (entry.action == TraceAction::Oom) {
            OomEvent o;
            o.eventIndex = idx;
            o.size = entry.size;
            o.deviceFree = imp.intField(e, "device_free", epath, 0);
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
    const size_t first = snapshot.devices.size();
    JsonDictAccess access;
    SnapshotDictImport<JsonDictAccess>(access, snapshot).run(&root);
    for (size_t i = first; i < snapshot.devices.size(); ++i) {
        snapshot.devices[i].sourceFormat = "snapshot (JSON)";
        snapshot.devices[i].sourceFile = snapshot.path;
    }
}

} // namespace headroom
