// SPDX-License-Identifier: MIT
#include "core/io/jsonimport.h"

#include "core/io/chrometraceimporter.h"
#include "core/io/jsonsnapshotimporter.h"
#include "core/io/profiletimelineimporter.h"
#include "core/util/loaderror.h"

#include <nlohmann/json.hpp>

namespace headroom {

namespace {

std::string cleanMessage(const std::string& what)
{
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> "parse error ..."
    const size_t close = what.find("] ");
    return close != std::string::npos && what.rfind("[json.exception", 0) == 0 ? what.substr(close + 2) : what;
}

/// A DOM builder for nlohmann's SAX parser that drops unused Chrome trace events as soon
/// as they are complete (nlohmann's own callback parser rescans the parent array for every
/// discarded element, which is quadratic on a 200k-event trace).
class FilteringBuilder {
public:
    using json = nlohmann::json;
    json root;
    size_t errorAt = 0;
    std::string error;

    bool null() { handle(nullptr); return true; }
    bool boolean(bool v) { handle(v); return true; }
    bool number_integer(json::number_integer_t v) { handle(v); return true; }
    bool number_unsigned(json::number_unsigned_t v) { handle(v); return true; }
    bool number_float(json::number_float_t v, const json::string_t&) { handle(v); return true; }
    bool string(json::string_t& v) { handle(std::move(v)); return true; }
    bool binary(json::binary_t& v) { handle(std::move(v)); return true; }
    bool start_object(std::size_t) { m_stack.push_back(handle(json::value_t::object)); return true; }
    bool key(json::string_t& k)
    {
        m_element = &(*m_stack.back())[k];
        return true;
    }
    bool end_object()
    {
        json* obj = m_stack.back();
        m_stack.pop_back();
        if (!m_stack.empty() && m_stack.size() <= 2 && m_stack.back()->is_array() &&
            !ChromeTraceImporter::keepEvent(*obj))
            m_stack.back()->get_ref<json::array_t&>().pop_back();
        return true;
    }
    bool start_array(std::size_t) { m_stack.push_back(handle(json::value_t::array)); return true; }
    bool end_array() { m_stack.pop_back(); return true; }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex)
    {
        errorAt = position;
        error = ex.what();
        return false;
    }

private:
    template <typename V>
    json* handle(V&& v)
    {
        if (m_stack.empty()) {
            root = json(std::forward<V>(v));
            return &root;
        }
        json* top = m_stack.back();
        if (top->is_array()) {
            auto& arr = top->get_ref<json::array_t&>();
            arr.emplace_back(std::forward<V>(v));
            return &arr.back();
        }
        *m_element = json(std::forward<V>(v));
        return m_element;
    }
    std::vector<json*> m_stack;
    json* m_element = nullptr;
};

} // namespace

void JsonImport::import(std::string_view text, const std::string& path, Snapshot& snap)
{
    FilteringBuilder builder;
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &builder)) {
        const int64_t at = builder.errorAt > 0 ? static_cast<int64_t>(builder.errorAt) - 1 : 0;
        throw LoadError(path, at, "invalid JSON (" + cleanMessage(builder.error) +
                                      "); expected a snapshot, a Chrome trace or a profiler memory timeline");
    }
    const nlohmann::json& root = builder.root;
    try {
        if (ChromeTraceImporter::accepts(root)) {
            ChromeTraceImporter::import(root, snap);
        } else if (JsonSnapshotImporter::accepts(root) ||
                   (root.is_array() && !root.empty() && root[0].is_object() &&
                    (root[0].contains("total_size") || root[0].contains("blocks")))) {
            snap.format = "snapshot (JSON)";
            JsonSnapshotImporter::import(root, snap);
        } else if (ProfileTimelineImporter::acceptsTimesSizes(root)) {
            ProfileTimelineImporter::importTimesSizes(root, snap);
        } else if (ProfileTimelineImporter::acceptsRaw(root)) {
            ProfileTimelineImporter::importRaw(root, snap);
        } else {
            std::string found = root.type_name();
            if (root.is_object()) {
                std::string keys;
                int k = 0;
                for (auto it = root.begin(); it != root.end() && k < 12; ++it, ++k)
                    keys += (keys.empty() ? "" : ", ") + it.key();
                found = "an object with keys {" + keys + "}";
            } else if (root.is_array()) {
                found = root.empty() ? "an empty list" : "a list of " + std::string(root[0].type_name()) + "s";
            }
            throw LoadError(path, LoadError::kNoOffset,
                            "top level: unrecognised JSON; expected a snapshot {segments, device_traces}, a Chrome "
                            "trace {traceEvents}, a raw memory timeline [[t, action, bytes, category], ...] or "
                            "[times, sizes]; found " + found);
        }
    } catch (const nlohmann::json::exception& e) {
        throw LoadError(path, LoadError::kNoOffset, "unexpected JSON content (" + cleanMessage(e.what()) + ")");
    }
}

} // namespace headroom
