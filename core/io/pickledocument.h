// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/snapshotmodel.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace headroom {

namespace detail {
class PickleParser;
}

/// A value of the pickle subset PyTorch snapshots use, in 8 bytes: a 4-bit tag and a
/// 60-bit payload (an inline integer, or an index into one of the document's tables).
/// Containers are referenced by index, so a memoized frame list referenced 100,000
/// times exists once.
class PickleValue {
public:
    enum class Tag : uint8_t {
        None, Bool, Int, BigInt, Float, Str, Bytes, List, Dict, Tuple,
        Frame, ///< a frame dict, already interned into the FrameTable (payload: frame id)
        Stack, ///< a list of frames, already interned (payload: stack id)
        Event, ///< a trace-entry dict, already stored as flat arrays (payload: event index)
        Mark,
    };

    static constexpr int64_t kInlineMin = -(int64_t(1) << 59);
    static constexpr int64_t kInlineMax = (int64_t(1) << 59) - 1;

    PickleValue() = default;
    static PickleValue make(Tag t, uint64_t payload) { return PickleValue((payload << 4) | uint64_t(t)); }
    static PickleValue makeInt(int64_t v) { return PickleValue((uint64_t(v) << 4) | uint64_t(Tag::Int)); }

    Tag tag() const { return Tag(m_bits & 0xF); }
    uint64_t payload() const { return m_bits >> 4; }
    int64_t inlineInt() const { return int64_t(m_bits) >> 4; }
    bool operator==(const PickleValue&) const = default;

private:
    explicit PickleValue(uint64_t bits) : m_bits(bits) {}
    uint64_t m_bits = 0;
};

/// An integer that did not fit inline: LONG1/LONG4 up to 9 bytes and beyond.
struct PickleBigInt {
    enum class Kind : uint8_t { Signed, Unsigned, Clamped };
    uint64_t bits = 0; ///< int64 or uint64 two's-complement bits
    Kind kind = Kind::Signed;
};

/// The object graph of one pickle: a DAG of compact values. Trace entries and frames
/// are not kept as dicts: the reader turns them into flat arrays (`events`) and
/// interned frames and stacks (the FrameTable it was given) as soon as they are
/// complete, so memory stays proportional to the file's distinct content.
class PickleDocument {
public:
    using Value = PickleValue;
    using Tag = PickleValue::Tag;

    explicit PickleDocument(FrameTable& frames) : m_frames(&frames) {}

    Value root() const { return m_root; }
    int protocol() const { return m_protocol; }
    bool cppPicklerStyle() const { return m_cppPicklerStyle; }

    /// A container whose content was converted (frame dict, frame list, trace entry)
    /// resolves to its Frame/Stack/Event value; everything else is returned as is.
    /// Inline: the parser calls it for every memo read and every container item.
    Value resolve(Value v) const
    {
        const Tag t = v.tag();
        if (t == Tag::List || t == Tag::Dict || t == Tag::Tuple) {
            const Slot& s = m_slots[v.payload()];
            if (s.kind == Tag::Frame || s.kind == Tag::Stack || s.kind == Tag::Event)
                return Value::make(s.kind, s.payload);
        }
        return v;
    }

    bool isList(Value v) const;  ///< list or tuple (interchangeable in snapshots)
    bool isDict(Value v) const;
    std::span<const Value> items(Value v) const; ///< list/tuple items; dict: k0,v0,k1,v1...
    std::optional<Value> get(Value dict, std::string_view key) const;

    std::optional<std::string_view> asString(Value v) const;
    std::optional<int64_t> asInt(Value v) const; ///< also accepts bool and unsigned 64-bit bits
    std::optional<double> asNumber(Value v) const;
    std::optional<bool> asBool(Value v) const;
    /// A list of strings as one text (PyTorch's `forward_frames`: pre-formatted lines, joined
    /// as its viewer joins them, with a newline added where a line has none); nullopt for
    /// anything else.
    std::optional<std::string> joinedStrings(Value v) const;
    /// A 2-tuple of integers (`pool_id`, `segment_pool_id`).
    std::optional<std::pair<int64_t, int64_t>> intPair(Value v) const;
    /// A stack id for a frames value (Stack, or a list of frames or of C++ frame strings).
    std::optional<uint32_t> asStack(Value v);
    std::string toText(Value v, int depth = 0) const; ///< short rendering for messages and settings
    const char* typeName(Value v) const;

    const TraceEvents& events() const { return m_events; }
    TraceEvents& events() { return m_events; }
    const std::vector<uint32_t>& eventActionString() const { return m_eventActionString; }
    std::string_view string(uint32_t id) const;
    FrameTable& frames() { return *m_frames; }

private:
    friend class detail::PickleParser;

    struct Slot {
        Tag kind;         // List, Dict, Tuple (generic) or Frame, Stack, Event (converted)
        uint32_t payload; // storage index (kNoStorage if empty), or the converted id
    };
    struct StrRef {
        uint64_t offset;
        uint64_t length;
    };
    static constexpr uint32_t kNoStorage = 0xffffffffu;

    std::span<const Value> storageOf(uint64_t container) const;

    FrameTable* m_frames;
    const char* m_base = nullptr; // strings point into the input buffer
    Value m_root;
    int m_protocol = 0;
    bool m_cppPicklerStyle = false;
    std::vector<StrRef> m_strings;
    std::vector<PickleBigInt> m_bigInts;
    std::vector<double> m_floats;
    std::vector<Slot> m_slots;
    std::vector<std::vector<Value>> m_storage;
    std::vector<uint32_t> m_freeStorage;
    TraceEvents m_events;
    std::vector<uint32_t> m_eventActionString; // pickle string id of each event's action
    std::vector<uint32_t> m_scratch;
};

} // namespace headroom
