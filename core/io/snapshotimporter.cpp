// SPDX-License-Identifier: MIT
#include "core/io/snapshotimporter.h"

#include "core/io/snapshotdictimport.h"

#include <algorithm>
#include <map>

namespace headroom {

namespace {

using Value = PickleValue;
using Tag = PickleValue::Tag;

/// The PickleDocument as SnapshotDictImport reads it. Trace entries are no dicts here: the
/// reader already stored them as flat arrays (PickleDocument::events), so a device's trace
/// is the list of their indices.
class PickleDictAccess {
public:
    using Value = PickleValue;

    explicit PickleDictAccess(PickleDocument& doc) : m_doc(doc) {}

    bool isList(Value v) const { return m_doc.isList(v); }
    bool isDict(Value v) const { return m_doc.isDict(v); }
    bool isNull(Value v) const { return v.tag() == Tag::None; }
    std::span<const Value> items(Value v) const { return m_doc.items(v); }
    std::optional<Value> get(Value dict, std::string_view key) const { return m_doc.get(dict, key); }
    std::optional<int64_t> asInt(Value v) const { return m_doc.asInt(v); }
    std::optional<std::string_view> asString(Value v) const { return m_doc.asString(v); }
    std::optional<bool> asBool(Value v) const { return m_doc.asBool(v); }
    template <class Import>
    std::optional<uint32_t> asStack(Import&, Value v, const std::string&, std::string_view)
    {
        return m_doc.asStack(v);
    }
    std::string toText(Value v) const { return m_doc.toText(v); }
    const char* typeName(Value v) const { return m_doc.typeName(v); }
    template <class F>
    void forEachItem(Value dict, F&& f) const
    {
        const auto kv = m_doc.items(dict);
        for (size_t i = 0; i + 1 < kv.size(); i += 2)
            f(m_doc.toText(kv[i]), kv[i + 1]);
    }
    template <class Import>
    void importTrace(Import& imp, Value list, DeviceData& dev, const std::string& path);
    // Read from the whole event store before importTrace() moves it out to a device: a
    // single-device file's time_us and compile_context count as the JSON import counts them.
    bool sawTime() const { return m_sawTime || m_doc.events().anyTime; }
    bool sawCompileContext() const
    {
        const TraceEvents& ev = m_doc.events();
        return m_sawCompileContext || !ev.compileContext.empty() || !ev.userMetadata.empty();
    }

private:
    PickleDocument& m_doc;
    bool m_sawTime = false;
    bool m_sawCompileContext = false;
};

template <class Import>
void PickleDictAccess::importTrace(Import& imp, Value list, DeviceData& dev, const std::string& path)
{
    TraceEvents& all = m_doc.events();
    m_sawTime |= all.anyTime;
    m_sawCompileContext |= !all.compileContext.empty() || !all.userMetadata.empty();
    const auto entries = m_doc.items(list);
    std::vector<uint32_t> idx;
    idx.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        const Value e = m_doc.resolve(entries[i]);
        if (e.tag() != Tag::Event)
            imp.fail(path + "[" + std::to_string(i) + "]",
                     std::string("expected a trace entry dict with an 'action' string, found ") + m_doc.typeName(e));
        idx.push_back(static_cast<uint32_t>(e.payload()));
    }
    TraceEvents& out = dev.trace;
    const bool sortedIdx = std::is_sorted(idx.begin(), idx.end());
    const bool wholeStore = idx.size() == all.count() && idx.front() == 0 && sortedIdx && idx.back() == idx.size() - 1;
    // Counted by the file's action strings, not TraceAction, so unknown actions keep their names.
    std::map<uint32_t, uint64_t> countsByString;
    const auto& actionStrings = m_doc.eventActionString();
    for (uint32_t i : idx)
        ++countsByString[actionStrings[i]];
    for (auto& [sid, n] : countsByString)
        dev.actionCounts[std::string(m_doc.string(sid))] += n;
    if (wholeStore) { // the common single-device case: no copy
        out = std::move(all);
        all = TraceEvents{};
    } else {
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
        out.reserve(idx.size());
        for (uint32_t i : idx)
            out.append({all.action[i], all.addr[i], all.size[i], all.streamAt(i), all.timeUs[i], all.stack[i]});
        out.anyTime = std::any_of(out.timeUs.begin(), out.timeUs.end(),
                                  [](int64_t t) { return t != TraceEvents::kNoTime; });
        remapSparse(all.deviceFree, out.deviceFree);
        remapSparse(all.compileContext, out.compileContext);
        remapSparse(all.userMetadata, out.userMetadata);
        remapSparse(all.forwardFrames, out.forwardFrames);
        remapSparse(all.poolIds, out.poolIds);
        remapSparse(all.tensors, out.tensors);
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

} // namespace

void SnapshotImporter::import(PickleDocument& doc, Snapshot& snapshot)
{
    PickleDictAccess access(doc);
    SnapshotDictImport<PickleDictAccess>(access, snapshot).run(doc.resolve(doc.root()));
}

} // namespace headroom
