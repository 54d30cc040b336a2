// SPDX-License-Identifier: MIT
#pragma once

// The state machine behind PickleReader (internal to core/). The opcode loop lives in
// picklereader.cpp, the container conversions in pickleparser.cpp; what runs once per
// opcode (stack pushes, memo reads) is inline here so that the loop pays no call for it:
// a million-event snapshot is some 35 million opcodes, most of them memo reads.

#include "core/io/pickledocument.h"
#include "core/io/picklereader.h"
#include "core/io/stackruncache.h"
#include "core/util/loaderror.h"
#include "core/util/pageprefaulter.h"

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace headroom::detail {

/// Words the reader recognises in keys and action values; cached per pickle string.
enum class Word : uint8_t {
    Unclassified, Other,
    Action, Addr, Size, Stream, TimeUs, Frames, CppFrames, DeviceFree, CompileContext, UserMetadata, HeadroomTensor,
    ForwardFrames, PoolId, Filename, Line, Name, FxNodeOp, FxNodeName, FxNodeTarget, FxOriginalTrace,
};

Word classifyWord(std::string_view s);

/// The pickle machine's value stack. A std::vector's push_back was not inlined into the
/// opcode loop (10% of a load went to the out-of-line call); here the common case is a
/// compare and a store, and growing is the rare call.
class ValueStack {
public:
    using Value = PickleValue;

    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    Value* data() { return m_buf.data(); }
    Value& back() { return m_buf[m_size - 1]; }
    Value& operator[](size_t i) { return m_buf[i]; }
    void push_back(Value v)
    {
        if (m_size == m_buf.size()) [[unlikely]]
            grow();
        m_buf[m_size++] = v;
    }
    void pop_back() { --m_size; }
    void resize(size_t n) ///< shrinks only: what the machine pops
    {
        m_size = n;
    }
    void insert(size_t at, Value v)
    {
        push_back(v);
        std::memmove(m_buf.data() + at + 1, m_buf.data() + at, (m_size - 1 - at) * sizeof(Value));
        m_buf[at] = v;
    }
    void reserve(size_t n)
    {
        if (n > m_buf.size())
            m_buf.resize(n);
    }

private:
    void grow() { m_buf.resize(m_buf.empty() ? 4096 : m_buf.size() * 2); }
    std::vector<Value> m_buf;
    size_t m_size = 0;
};

class PickleParser {
public:
    using Value = PickleValue;
    using Tag = PickleValue::Tag;

    PickleParser(PickleDocument& doc, const uint8_t* data, size_t size, const std::string& file,
                 const PickleReader::Options& opt)
        : m_doc(doc), m_begin(data), m_p(data), m_end(data + size), m_file(file), m_opt(opt)
    {
    }

    void run();

private:
    [[noreturn]] void fail(const uint8_t* at, const std::string& what) const
    {
        throw LoadError(m_file, at - m_begin, what);
    }

    [[noreturn]] void truncated(const char* what) const;
    void need(size_t n, const char* what)
    {
        if (static_cast<size_t>(m_end - m_p) < n) [[unlikely]]
            truncated(what);
    }
    uint8_t u8(const char* what) { need(1, what); return *m_p++; }
    uint16_t u16(const char* what) { need(2, what); uint16_t v = uint16_t(m_p[0] | (m_p[1] << 8)); m_p += 2; return v; }
    uint32_t u32(const char* what)
    {
        need(4, what);
        uint32_t v;
        std::memcpy(&v, m_p, 4);
        m_p += 4;
        return v; // little-endian host (x86_64, aarch64)
    }
    uint64_t u64(const char* what)
    {
        need(8, what);
        uint64_t v;
        std::memcpy(&v, m_p, 8);
        m_p += 8;
        return v;
    }

    Value pop(const uint8_t* op)
    {
        if (m_stack.size() <= m_markFloor())
            fail(op, "pickle stack underflow; expected a value on the stack");
        Value v = m_stack.back();
        m_stack.pop_back();
        if (v.tag() == Tag::Mark)
            fail(op, "found a MARK where a value was expected");
        return v;
    }
    size_t m_markFloor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    Value& top(const uint8_t* op)
    {
        if (m_stack.size() <= m_markFloor())
            fail(op, "pickle stack underflow; expected a container on the stack");
        return m_stack.back();
    }
    size_t popMark(const uint8_t* op)
    {
        if (m_marks.empty())
            fail(op, "no MARK on the stack for this opcode");
        size_t m = m_marks.back();
        m_marks.pop_back();
        return m;
    }

    Value newContainer(Tag kind)
    {
        const auto id = m_doc.m_slots.size();
        if (id >= (uint64_t(1) << 32))
            fail(m_p, "too many containers");
        m_doc.m_slots.push_back({kind, PickleDocument::kNoStorage});
        return Value::make(kind, id);
    }
    std::vector<Value>& storageFor(uint64_t container);
    Value makeTuple(const Value* first, size_t n);
    Value makeString(const uint8_t* at, uint64_t len, Tag tag);
    Value makeInt(int64_t v)
    {
        if (v >= Value::kInlineMin && v <= Value::kInlineMax)
            return Value::makeInt(v);
        m_doc.m_bigInts.push_back({static_cast<uint64_t>(v), PickleBigInt::Kind::Signed});
        return Value::make(Tag::BigInt, m_doc.m_bigInts.size() - 1);
    }
    Value readLong(const uint8_t* op, uint64_t n);

    Word word(Value key)
    {
        if (key.tag() != Tag::Str)
            return Word::Other;
        const auto id = key.payload();
        Word& w = m_wordCache[id];
        if (w == Word::Unclassified)
            w = classifyWord(m_doc.string(static_cast<uint32_t>(id)));
        return w;
    }
    TraceAction actionOf(Value v)
    {
        const auto id = v.payload();
        uint8_t& a = m_actionCache[id];
        if (a == 0xff)
            a = static_cast<uint8_t>(actionFromName(m_doc.string(static_cast<uint32_t>(id))));
        return static_cast<TraceAction>(a);
    }

    void setItems(const uint8_t* op, size_t from);
    void appendItems(const uint8_t* op, size_t from);
    bool tryFrame(uint64_t container, const Value* kv, size_t n);
    bool tryEvent(uint64_t container, const Value* kv, size_t n);
    uint32_t stackFor(const uint8_t* op, Value v);
    void memoPut(uint64_t index, Value v);
    /// A memo read: most opcodes of a snapshot are one (the frames of every traceback).
    Value memoGet(const uint8_t* op, uint64_t index)
    {
        if (index < m_memo.size() && m_memo[index].tag() != Tag::Mark) [[likely]] {
            // Path compression: once a memoized frame dict or frame list has been converted,
            // later references get the converted value without another slot lookup.
            Value& v = m_memo[index];
            v = m_doc.resolve(v);
            return v;
        }
        return memoGetSparse(op, index);
    }
    Value memoGetSparse(const uint8_t* op, uint64_t index);
    void checkpoint();
    /// At a MARK: when a fresh list is on top and a run of memo reads and APPENDS follow
    /// whose bytes were seen before as a frame list, makes the list that stack and skips
    /// past the APPENDS. Otherwise notes the run for appendItems() to remember.
    bool tryCachedStack();
    /// The arrays that grow with the file, reserved by its size, and their prefaulting.
    void reserveGrowing();
    void advancePrefault();

    PickleDocument& m_doc;
    const uint8_t* m_begin;
    const uint8_t* m_p;
    const uint8_t* m_end;
    const std::string& m_file;
    const PickleReader::Options& m_opt;
    ValueStack m_stack;
    std::vector<size_t> m_marks;
    std::vector<Value> m_memo;
    std::vector<uint32_t> m_ids;
    std::unordered_map<uint64_t, Value> m_sparseMemo;
    std::vector<Word> m_wordCache;
    std::vector<uint8_t> m_actionCache;
    uint64_t m_memoCount = 0;
    uint64_t m_emptyContainers = 0;
    uint64_t m_containerPuts = 0;
    bool m_sawMemoize = false;
    bool m_sawBinput = false;
    bool m_sawFrame = false;
    std::unique_ptr<PagePrefaulter> m_prefault; // large files only
    StackRunCache m_runCache;
    struct PendingRun {
        const uint8_t* begin = nullptr;
        const uint8_t* end = nullptr; // the APPENDS opcode
        uint64_t hash = 0;
    } m_pendingRun;
};

} // namespace headroom::detail
