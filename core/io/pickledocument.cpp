// SPDX-License-Identifier: MIT
#include "core/io/pickledocument.h"

#include <cstdio>

namespace headroom {

using Value = PickleValue;
using Tag = PickleValue::Tag;

std::span<const Value> PickleDocument::storageOf(uint64_t container) const
{
    const Slot& s = m_slots[container];
    if (s.payload == kNoStorage)
        return {};
    return m_storage[s.payload];
}

bool PickleDocument::isList(Value v) const
{
    v = resolve(v);
    return v.tag() == Tag::List || v.tag() == Tag::Tuple;
}

bool PickleDocument::isDict(Value v) const
{
    return resolve(v).tag() == Tag::Dict;
}

std::span<const Value> PickleDocument::items(Value v) const
{
    v = resolve(v);
    if (v.tag() == Tag::List || v.tag() == Tag::Tuple || v.tag() == Tag::Dict)
        return storageOf(v.payload());
    return {};
}

std::string_view PickleDocument::string(uint32_t id) const
{
    const StrRef& r = m_strings[id];
    return {m_base + r.offset, static_cast<size_t>(r.length)};
}

std::optional<std::string_view> PickleDocument::asString(Value v) const
{
    if (v.tag() != Tag::Str)
        return std::nullopt;
    return string(static_cast<uint32_t>(v.payload()));
}

std::optional<Value> PickleDocument::get(Value dict, std::string_view key) const
{
    dict = resolve(dict);
    if (dict.tag() != Tag::Dict)
        return std::nullopt;
    auto kv = storageOf(dict.payload());
    for (size_t i = 0; i + 1 < kv.size(); i += 2) {
        auto k = asString(kv[i]);
        if (k && *k == key)
            return kv[i + 1];
    }
    return std::nullopt;
}

std::optional<int64_t> PickleDocument::asInt(Value v) const
{
    switch (v.tag()) {
    case Tag::Int: return v.inlineInt();
    case Tag::Bool: return static_cast<int64_t>(v.payload());
    case Tag::BigInt: return static_cast<int64_t>(m_bigInts[v.payload()].bits);
    default: return std::nullopt;
    }
}

std::optional<double> PickleDocument::asNumber(Value v) const
{
    if (v.tag() == Tag::Float)
        return m_floats[v.payload()];
    if (v.tag() == Tag::BigInt) {
        const auto& b = m_bigInts[v.payload()];
        return b.kind == PickleBigInt::Kind::Signed ? double(int64_t(b.bits)) : double(b.bits);
    }
    if (auto i = asInt(v))
        return static_cast<double>(*i);
    return std::nullopt;
}

std::optional<bool> PickleDocument::asBool(Value v) const
{
    if (v.tag() == Tag::Bool)
        return v.payload() != 0;
    if (v.tag() == Tag::Int)
        return v.inlineInt() != 0;
    return std::nullopt;
}

std::optional<std::string> PickleDocument::joinedStrings(Value v) const
{
    v = resolve(v);
    if (v.tag() != Tag::List && v.tag() != Tag::Tuple)
        return std::nullopt;
    std::string out;
    for (Value item : items(v)) {
        const auto s = asString(item);
        if (!s)
            return std::nullopt;
        if (!out.empty() && out.back() != '\n')
            out += '\n';
        out += *s;
    }
    return out;
}

std::optional<std::pair<int64_t, int64_t>> PickleDocument::intPair(Value v) const
{
    if (!isList(v))
        return std::nullopt;
    const auto xs = items(v);
    if (xs.size() != 2)
        return std::nullopt;
    const auto a = asInt(xs[0]), b = asInt(xs[1]);
    if (!a || !b)
        return std::nullopt;
    return std::pair<int64_t, int64_t>{*a, *b};
}

std::optional<uint32_t> PickleDocument::asStack(Value v)
{
    v = resolve(v);
    if (v.tag() == Tag::Stack)
        return static_cast<uint32_t>(v.payload());
    if (v.tag() == Tag::None)
        return FrameTable::kEmptyStack;
    if (v.tag() != Tag::List && v.tag() != Tag::Tuple)
        return std::nullopt;
    std::vector<uint32_t>& ids = const_cast<PickleDocument*>(this)->m_scratch;
    ids.clear();
    for (Value item : storageOf(v.payload())) {
        item = resolve(item);
        if (item.tag() == Tag::Frame) {
            ids.push_back(static_cast<uint32_t>(item.payload()));
        } else if (auto s = asString(item)) { // 2.0-era cpp_frames: pre-formatted strings
            ids.push_back(m_frames->internFrame("", 0, *s));
        } else {
            return std::nullopt;
        }
    }
    const uint32_t id = m_frames->internStack(ids);
    if (v.tag() == Tag::List) {
        auto* self = const_cast<PickleDocument*>(this);
        Slot& s = self->m_slots[v.payload()];
        if (s.payload != kNoStorage) {
            self->m_storage[s.payload].clear();
            self->m_freeStorage.push_back(s.payload);
        }
        s = Slot{Tag::Stack, id};
    }
    return id;
}

const char* PickleDocument::typeName(Value v) const
{
    switch (resolve(v).tag()) {
    case Tag::None: return "None";
    case Tag::Bool: return "bool";
    case Tag::Int:
    case Tag::BigInt: return "int";
    case Tag::Float: return "float";
    case Tag::Str: return "str";
    case Tag::Bytes: return "bytes";
    case Tag::List: return "list";
    case Tag::Dict: return "dict";
    case Tag::Tuple: return "tuple";
    case Tag::Frame: return "frame dict";
    case Tag::Stack: return "frame list";
    case Tag::Event: return "trace entry";
    case Tag::Mark: return "mark";
    }
    return "?";
}

std::string PickleDocument::toText(Value v, int depth) const
{
    v = resolve(v);
    switch (v.tag()) {
    case Tag::None: return "None";
    case Tag::Bool: return v.payload() ? "True" : "False";
    case Tag::Int: return std::to_string(v.inlineInt());
    case Tag::BigInt: {
        const auto& b = m_bigInts[v.payload()];
        if (b.kind == PickleBigInt::Kind::Signed)
            return std::to_string(int64_t(b.bits));
        return std::to_string(b.bits) + (b.kind == PickleBigInt::Kind::Clamped ? " (clamped)" : "");
    }
    case Tag::Float: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", m_floats[v.payload()]);
        return buf;
    }
    case Tag::Str: return std::string(string(static_cast<uint32_t>(v.payload())));
    case Tag::Bytes: return "<bytes>";
    case Tag::List:
    case Tag::Tuple:
    case Tag::Dict: {
        if (depth > 3)
            return "...";
        const bool dict = v.tag() == Tag::Dict;
        std::string s = dict ? "{" : (v.tag() == Tag::List ? "[" : "(");
        auto it = storageOf(v.payload());
        for (size_t i = 0; i < it.size(); ++i) {
            if (i > 0)
                s += (dict && i % 2 == 1) ? ": " : ", ";
            if (s.size() > 200) {
                s += "...";
                break;
            }
            s += toText(it[i], depth + 1);
        }
        s += dict ? "}" : (v.tag() == Tag::List ? "]" : ")");
        return s;
    }
    case Tag::Frame: return m_frames->formatFrame(static_cast<uint32_t>(v.payload()));
    case Tag::Stack: return "<stack>";
    case Tag::Event: return "<trace entry>";
    case Tag::Mark: return "<mark>";
    }
    return "?";
}

} // namespace headroom
