// SPDX-License-Identifier: MIT
#include "core/picklereader.h"

#include "core/loaderror.h"
#include "core/utf8.h"

#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace headroom {

namespace {

/// A float time_us as an integer. Casting a value outside int64 (or NaN) is undefined
/// behaviour (found by fuzz_pickle_reader): such a time becomes INT64_MAX, which the
/// loader's range check then refuses with the device, entry and value named.
/// A float where an integer belongs (a time, or a size written as 1e30): its integer value,
/// or INT64_MAX beyond int64 so that the loader's range check refuses it by name.
int64_t intFromFloat(double d)
{
    if (!(d > -9.0e18 && d < 9.0e18))
        return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(d);
}

using Value = PickleValue;
using Tag = PickleValue::Tag;

/// Words the reader recognises in keys and action values; cached per pickle string.
enum class Word : uint8_t {
    Unclassified, Other,
    Action, Addr, Size, Stream, TimeUs, Frames, CppFrames, DeviceFree, CompileContext, UserMetadata,
    Filename, Line, Name,
};

Word classifyWord(std::string_view s)
{
    static const std::unordered_map<std::string_view, Word> kWords = {
        {"action", Word::Action}, {"addr", Word::Addr}, {"size", Word::Size}, {"stream", Word::Stream},
        {"time_us", Word::TimeUs}, {"frames", Word::Frames}, {"cpp_frames", Word::CppFrames},
        {"device_free", Word::DeviceFree}, {"compile_context", Word::CompileContext},
        {"user_metadata", Word::UserMetadata}, {"filename", Word::Filename}, {"line", Word::Line},
        {"name", Word::Name},
    };
    auto it = kWords.find(s);
    return it == kWords.end() ? Word::Other : it->second;
}

const char* refusedOpcodeName(uint8_t op)
{
    switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    default: return nullptr;
    }
}

} // namespace

namespace detail {

class PickleParser {
public:
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
    int64_t offset() const { return m_p - m_begin; }

    void need(size_t n, const char* what)
    {
        if (static_cast<size_t>(m_end - m_p) < n)
            fail(m_p, std::string("unexpected end of file while reading ") + what + "; the file is truncated");
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
    std::vector<Value>& storageFor(uint64_t container)
    {
        auto& slot = m_doc.m_slots[container];
        if (slot.payload == PickleDocument::kNoStorage) {
            if (!m_doc.m_freeStorage.empty()) {
                slot.payload = m_doc.m_freeStorage.back();
                m_doc.m_freeStorage.pop_back();
            } else {
                slot.payload = static_cast<uint32_t>(m_doc.m_storage.size());
                m_doc.m_storage.emplace_back();
            }
        }
        return m_doc.m_storage[slot.payload];
    }
    Value makeTuple(const Value* first, size_t n)
    {
        Value t = newContainer(Tag::Tuple);
        if (n > 0) {
            auto& st = storageFor(t.payload());
            for (size_t i = 0; i < n; ++i)
                st.push_back(m_doc.resolve(first[i]));
        }
        return t;
    }
    static std::string hexByte(uint8_t b)
    {
        static const char* digits = "0123456789abcdef";
        return {digits[b >> 4], digits[b & 15]};
    }
    Value makeString(const uint8_t* at, uint64_t len, Tag tag)
    {
        if (static_cast<uint64_t>(m_end - m_p) < len)
            fail(at, "string length " + std::to_string(len) + " runs past the end of the file; the file is truncated");
        if (tag == Tag::Str) {
            // Found by the bad-input corpus: a flipped byte in a frame name reached the JSON
            // output as invalid UTF-8 and nlohmann::json threw from dump().
            if (const size_t bad = utf8InvalidAt(m_p, len); bad != len)
                fail(m_p + bad, "invalid UTF-8 in a string (byte 0x" + hexByte(m_p[bad]) +
                                    "); the file is corrupt");
        }
        const auto id = m_doc.m_strings.size();
        m_doc.m_strings.push_back({static_cast<uint64_t>(m_p - m_begin), len});
        m_wordCache.push_back(Word::Unclassified);
        m_actionCache.push_back(0xff);
        m_p += len;
        return Value::make(tag, id);
    }
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
    Value memoGet(const uint8_t* op, uint64_t index);
    void checkpoint();

    PickleDocument& m_doc;
    const uint8_t* m_begin;
    const uint8_t* m_p;
    const uint8_t* m_end;
    const std::string& m_file;
    const PickleReader::Options& m_opt;
    std::vector<Value> m_stack;
    std::vector<size_t> m_marks;
    std::vector<Value> m_memo;
    std::vector<uint32_t> m_ids;
    std::unordered_map<uint64_t, Value> m_sparseMemo;
    std::vector<Word> m_wordCache;
    std::vector<uint8_t> m_actionCache;
    uint64_t m_memoCount = 0;
    uint64_t m_emptyContainers = 0;
    uint64_t m_containerPuts = 0;
    uint8_t m_prevOp = 0;
    bool m_sawMemoize = false;
    bool m_sawBinput = false;
    bool m_sawFrame = false;
};

Value PickleParser::readLong(const uint8_t* op, uint64_t n)
{
    if (static_cast<uint64_t>(m_end - m_p) < n)
        fail(op, "LONG length " + std::to_string(n) + " runs past the end of the file; the file is truncated");
    if (n == 0)
        return Value::makeInt(0);
    const uint8_t* b = m_p;
    m_p += n;
    const bool negative = (b[n - 1] & 0x80) != 0;
    if (n <= 8) {
        uint64_t v = 0;
        for (uint64_t i = 0; i < n; ++i)
            v |= uint64_t(b[i]) << (8 * i);
        if (negative && n < 8)
            v |= ~uint64_t(0) << (8 * n); // sign-extend
        return makeInt(static_cast<int64_t>(v));
    }
    // More than 8 bytes: exact if the high bytes are pure sign extension of a uint64.
    uint64_t low = 0;
    for (int i = 0; i < 8; ++i)
        low |= uint64_t(b[i]) << (8 * i);
    bool highZero = true;
    bool highOnes = true;
    for (uint64_t i = 8; i < n; ++i) {
        highZero &= b[i] == 0;
        highOnes &= b[i] == 0xff;
    }
    PickleBigInt big;
    if (highZero) {
        big = {low, (low >> 63) ? PickleBigInt::Kind::Unsigned : PickleBigInt::Kind::Signed};
    } else if (highOnes && (low >> 63)) {
        big = {low, PickleBigInt::Kind::Signed};
    } else {
        // Wider than 8 bytes: saturate, so a size of 10^30 is refused by the range checks
        // like 2^62 is (UINT64_MAX read as int64 would be -1, a 1-byte free).
        big = {negative ? uint64_t(INT64_MIN) : uint64_t(INT64_MAX), PickleBigInt::Kind::Clamped};
    }
    if (big.kind == PickleBigInt::Kind::Signed)
        return makeInt(static_cast<int64_t>(big.bits));
    m_doc.m_bigInts.push_back(big);
    return Value::make(Tag::BigInt, m_doc.m_bigInts.size() - 1);
}

void PickleParser::memoPut(uint64_t index, Value v)
{
    // Unset memo slots hold a Mark, which no real value can be.
    static const Value kUnset = Value::make(Tag::Mark, 0);
    if (index < m_memo.size()) {
        if (m_memo[index] == kUnset)
            ++m_memoCount;
        m_memo[index] = v;
    } else if (index <= m_memo.size() + 4096) {
        m_memo.resize(index + 1, kUnset);
        m_memo[index] = v;
        ++m_memoCount;
    } else {
        // Sparse: a far-away index must not make us allocate gigabytes.
        if (m_sparseMemo.insert_or_assign(index, v).second)
            ++m_memoCount;
    }
}

Value PickleParser::memoGet(const uint8_t* op, uint64_t index)
{
    if (index < m_memo.size() && m_memo[index].tag() != Tag::Mark) {
        // Path compression: once a memoized frame dict or frame list has been converted,
        // later references get the converted value without another slot lookup.
        Value& v = m_memo[index];
        v = m_doc.resolve(v);
        return v;
    }
    if (auto it = m_sparseMemo.find(index); it != m_sparseMemo.end())
        return m_doc.resolve(it->second);
    fail(op, "memo index " + std::to_string(index) + " is used before it was defined");
}

uint32_t PickleParser::stackFor(const uint8_t* op, Value v)
{
    auto id = m_doc.asStack(v);
    if (!id)
        fail(op, std::string("expected a list of frame dicts {filename, line, name} for 'frames', found ") +
                     m_doc.typeName(v));
    return *id;
}

bool PickleParser::tryFrame(uint64_t container, const Value* kv, size_t n)
{
    std::string_view file, name;
    int64_t line = 0;
    bool haveFile = false, haveName = false;
    for (size_t i = 0; i < n; i += 2) {
        switch (word(kv[i])) {
        case Word::Filename:
            if (auto s = m_doc.asString(kv[i + 1])) { file = *s; haveFile = true; } else return false;
            break;
        case Word::Name:
            if (auto s = m_doc.asString(kv[i + 1])) { name = *s; haveName = true; } else return false;
            break;
        case Word::Line:
            if (auto l = m_doc.asInt(kv[i + 1])) line = *l; else return false;
            break;
        default:
            break; // fx_node_* and other extras: not needed for display
        }
    }
    if (!haveFile || !haveName)
        return false;
    m_doc.m_slots[container] = {Tag::Frame, m_doc.m_frames->internFrame(file, line, name)};
    return true;
}

bool PickleParser::tryEvent(uint64_t container, const Value* kv, size_t n)
{
    size_t actionAt = n;
    for (size_t i = 0; i < n; i += 2) {
        if (word(kv[i]) == Word::Action && kv[i + 1].tag() == Tag::Str) {
            actionAt = i;
            break;
        }
    }
    if (actionAt == n)
        return false;
    TraceEvents& ev = m_doc.m_events;
    const auto index = static_cast<uint32_t>(ev.action.size());
    const Value actionValue = kv[actionAt + 1];
    const TraceAction action = actionOf(actionValue);
    m_doc.m_eventActionString.push_back(static_cast<uint32_t>(actionValue.payload()));
    uint64_t addr = 0;
    int64_t size = 0, stream = 0, time = TraceEvents::kNoTime;
    uint32_t stack = 0, cppStack = 0;
    for (size_t i = 0; i < n; i += 2) {
        const Value v = kv[i + 1];
        switch (word(kv[i])) {
        case Word::Addr:
            if (auto x = m_doc.asInt(v)) addr = static_cast<uint64_t>(*x);
            break;
        case Word::Size:
            if (auto x = m_doc.asInt(v)) size = *x;
            else if (auto d = m_doc.asNumber(v)) size = intFromFloat(*d);
            break;
        case Word::Stream:
            if (auto x = m_doc.asInt(v)) stream = *x;
            break;
        case Word::TimeUs:
            if (auto x = m_doc.asInt(v)) { time = *x; ev.anyTime = true; }
            else if (auto d = m_doc.asNumber(v)) { time = intFromFloat(*d); ev.anyTime = true; }
            break;
        case Word::Frames: stack = stackFor(m_p, v); break;
        case Word::CppFrames: cppStack = stackFor(m_p, v); break;
        case Word::DeviceFree:
            if (auto x = m_doc.asInt(v)) ev.deviceFree.emplace_back(index, *x);
            break;
        case Word::CompileContext:
            if (auto s = m_doc.asString(v); s && !s->empty())
                ev.compileContext.emplace_back(index, m_doc.m_frames->strings().intern(*s));
            break;
        case Word::UserMetadata:
            if (auto s = m_doc.asString(v); s && !s->empty())
                ev.userMetadata.emplace_back(index, m_doc.m_frames->strings().intern(*s));
            break;
        default:
            break;
        }
    }
    if (cppStack != 0) {
        // 2.0-era: Python frames and pre-formatted C++ frames; show both, Python first.
        std::vector<uint32_t> ids(m_doc.m_frames->stack(stack).begin(), m_doc.m_frames->stack(stack).end());
        auto cpp = m_doc.m_frames->stack(cppStack);
        ids.insert(ids.end(), cpp.begin(), cpp.end());
        stack = m_doc.m_frames->internStack(ids);
    }
    ev.append({action, addr, size, stream, time, stack});
    m_doc.m_slots[container] = {Tag::Event, index};
    return true;
}

void PickleParser::setItems(const uint8_t* op, size_t from)
{
    const size_t n = m_stack.size() - from;
    if (n % 2 != 0)
        fail(op, "SETITEMS with an odd number of stack items; expected key/value pairs");
    if (from == 0 || m_stack.size() < from)
        fail(op, "SETITEMS without a dict below the MARK");
    Value target = m_stack[from - 1];
    if (target.tag() != Tag::Dict)
        fail(op, std::string("SETITEMS on a ") + m_doc.typeName(target) + "; expected a dict");
    const uint64_t c = target.payload();
    auto& slot = m_doc.m_slots[c];
    Value* kv = m_stack.data() + from;
    for (size_t i = 0; i < n; ++i)
        kv[i] = m_doc.resolve(kv[i]);
    if (slot.kind == Tag::Dict && slot.payload == PickleDocument::kNoStorage && n > 0) {
        if (tryEvent(c, kv, n) || tryFrame(c, kv, n)) {
            m_stack.resize(from);
            return;
        }
    }
    if (slot.kind != Tag::Dict)
        fail(op, "more items for a dict that was already read as a frame or trace entry");
    auto& st = storageFor(c);
    for (size_t i = 0; i < n; i += 2) {
        Value v = kv[i + 1];
        const Word w = word(kv[i]);
        if ((w == Word::Frames || w == Word::CppFrames) && (v.tag() == Tag::List || v.tag() == Tag::Tuple)) {
            if (auto s = m_doc.asStack(v))
                v = Value::make(Tag::Stack, *s);
        }
        st.push_back(kv[i]);
        st.push_back(v);
    }
    m_stack.resize(from);
}

void PickleParser::appendItems(const uint8_t* op, size_t from)
{
    if (from == 0 || m_stack.size() < from)
        fail(op, "APPENDS without a list below the MARK");
    Value target = m_stack[from - 1];
    if (target.tag() != Tag::List)
        fail(op, std::string("APPENDS on a ") + m_doc.typeName(target) + "; expected a list");
    auto& slot = m_doc.m_slots[target.payload()];
    const size_t n = m_stack.size() - from;
    Value* items = m_stack.data() + from;
    bool allFrames = n > 0;
    for (size_t i = 0; i < n; ++i) {
        items[i] = m_doc.resolve(items[i]);
        allFrames &= items[i].tag() == Tag::Frame;
    }
    if (slot.kind == Tag::Stack) {
        // A frame list longer than one APPENDS batch: back to a generic list.
        auto frames = m_doc.m_frames->stack(slot.payload);
        std::vector<Value> existing;
        for (uint32_t f : frames)
            existing.push_back(Value::make(Tag::Frame, f));
        slot = {Tag::List, PickleDocument::kNoStorage};
        storageFor(target.payload()) = std::move(existing);
    } else if (slot.kind != Tag::List) {
        fail(op, std::string("APPENDS on a ") + m_doc.typeName(target) + "; expected a list");
    }
    if (allFrames && slot.payload == PickleDocument::kNoStorage) {
        // A list of frames (a traceback): intern it right away as a stack.
        m_ids.clear();
        for (size_t i = 0; i < n; ++i)
            m_ids.push_back(static_cast<uint32_t>(items[i].payload()));
        slot = {Tag::Stack, m_doc.m_frames->internStack(m_ids)};
    } else if (n > 0) {
        auto& st = storageFor(target.payload());
        st.insert(st.end(), items, items + n);
    }
    m_stack.resize(from);
}

void PickleParser::checkpoint()
{
    if (m_opt.cancel && m_opt.cancel->load(std::memory_order_relaxed))
        throw LoadCancelled();
    if (m_opt.progress)
        m_opt.progress(static_cast<uint64_t>(m_p - m_begin), static_cast<uint64_t>(m_end - m_begin));
    // The parser reads strictly forward; what it keeps are views that the document
    // resolves later, and those pages fault in again from the file when read.
    if (m_opt.consumed)
        m_opt.consumed(static_cast<size_t>(m_p - m_begin));
}

void PickleParser::run()
{
    m_doc.m_base = reinterpret_cast<const char*>(m_begin);
    if (m_p == m_end)
        fail(m_p, "the file is empty; expected a pickle");
    if (*m_p != 0x80)
        fail(m_p, "not a pickle: expected the PROTO opcode 0x80 at the start of a memory snapshot");
    m_stack.reserve(4096);
    // Reserve by file size (real snapshots spend 100-200 bytes per trace entry): untouched
    // reserved pages cost no memory, and no vector is copied while it grows.
    const size_t bytes = static_cast<size_t>(m_end - m_begin);
    m_doc.m_events.reserve(bytes / 160);
    m_doc.m_eventActionString.reserve(bytes / 160);
    m_doc.m_slots.reserve(bytes / 64);
    m_memo.reserve(bytes / 64);
    uint32_t tick = 0;
    while (true) {
        if (++tick == 65536) {
            tick = 0;
            checkpoint();
        }
        if (m_p >= m_end)
            fail(m_p, "the file ends before the pickle's STOP opcode; the file is truncated");
        const uint8_t* op = m_p;
        const uint8_t code = *m_p++;
        if (code == '}' || code == ']')
            ++m_emptyContainers;
        else if ((code == 'q' || code == 'r') && (m_prevOp == '}' || m_prevOp == ']'))
            ++m_containerPuts;
        m_prevOp = code;
        switch (code) {
        case 0x80: { // PROTO
            const uint8_t proto = u8("the PROTO version");
            if (proto < 2 || proto > 5)
                fail(op, "unsupported pickle protocol " + std::to_string(proto) + "; expected 2 to 5");
            m_doc.m_protocol = proto;
            break;
        }
        case 0x95: { // FRAME: framing is transparent for a reader of the whole buffer
            const uint64_t len = u64("the FRAME length");
            if (len > static_cast<uint64_t>(m_end - m_p))
                fail(op, "FRAME of " + std::to_string(len) + " bytes runs past the end of the file; the file is truncated");
            m_sawFrame = true;
            break;
        }
        case '.': { // STOP
            if (m_stack.empty() || !m_marks.empty())
                fail(op, "STOP with an unbalanced stack; expected exactly one value");
            m_doc.m_root = m_doc.resolve(m_stack.back());
            // Python's pickler memoizes every container; the TorchScript one only shared ones.
            m_doc.m_cppPicklerStyle = m_sawBinput && !m_sawMemoize && !m_sawFrame && m_doc.m_protocol == 2 &&
                                      m_containerPuts * 2 < m_emptyContainers;
            checkpoint();
            return; // trailing bytes (HTML padding) are ignored
        }
        case '(': m_marks.push_back(m_stack.size()); break;
        case '}': m_stack.push_back(newContainer(Tag::Dict)); break;
        case ']': m_stack.push_back(newContainer(Tag::List)); break;
        case ')': m_stack.push_back(newContainer(Tag::Tuple)); break;
        case 'd': { // DICT
            const size_t from = popMark(op);
            m_stack.insert(m_stack.begin() + static_cast<ptrdiff_t>(from), newContainer(Tag::Dict));
            setItems(op, from + 1);
            break;
        }
        case 'l': { // LIST
            const size_t from = popMark(op);
            m_stack.insert(m_stack.begin() + static_cast<ptrdiff_t>(from), newContainer(Tag::List));
            appendItems(op, from + 1);
            break;
        }
        case 't': { // TUPLE
            const size_t from = popMark(op);
            Value t = makeTuple(m_stack.data() + from, m_stack.size() - from);
            m_stack.resize(from);
            m_stack.push_back(t);
            break;
        }
        case 0x85: case 0x86: case 0x87: { // TUPLE1..3
            const size_t n = code - 0x84u;
            if (m_stack.size() < m_markFloor() + n)
                fail(op, "pickle stack underflow; expected " + std::to_string(n) + " tuple items");
            for (size_t i = m_stack.size() - n; i < m_stack.size(); ++i)
                if (m_stack[i].tag() == Tag::Mark)
                    fail(op, "found a MARK where a tuple item was expected");
            Value t = makeTuple(m_stack.data() + m_stack.size() - n, n);
            m_stack.resize(m_stack.size() - n);
            m_stack.push_back(t);
            break;
        }
        case 's': { // SETITEM
            if (m_stack.size() < m_markFloor() + 3)
                fail(op, "pickle stack underflow; SETITEM expects a dict, a key and a value");
            setItems(op, m_stack.size() - 2);
            break;
        }
        case 'u': setItems(op, popMark(op)); break; // SETITEMS
        case 'a': { // APPEND
            if (m_stack.size() < m_markFloor() + 2)
                fail(op, "pickle stack underflow; APPEND expects a list and a value");
            appendItems(op, m_stack.size() - 1);
            break;
        }
        case 'e': appendItems(op, popMark(op)); break; // APPENDS
        case 0x94: // MEMOIZE
            m_sawMemoize = true;
            memoPut(m_memoCount, top(op));
            break;
        case 'q': { m_sawBinput = true; const uint8_t i = u8("the BINPUT index"); memoPut(i, top(op)); break; }
        case 'r': { m_sawBinput = true; const uint32_t i = u32("the LONG_BINPUT index"); memoPut(i, top(op)); break; }
        case 'h': { const uint8_t i = u8("the BINGET index"); m_stack.push_back(memoGet(op, i)); break; }
        case 'j': { const uint32_t i = u32("the LONG_BINGET index"); m_stack.push_back(memoGet(op, i)); break; }
        case 'J': { const uint32_t v = u32("a BININT"); m_stack.push_back(Value::makeInt(int32_t(v))); break; }
        case 'K': m_stack.push_back(Value::makeInt(u8("a BININT1"))); break;
        case 'M': m_stack.push_back(Value::makeInt(u16("a BININT2"))); break;
        case 0x8a: { const uint8_t n = u8("the LONG1 length"); m_stack.push_back(readLong(op, n)); break; }
        case 0x8b: {
            const uint32_t n = u32("the LONG4 length");
            m_stack.push_back(readLong(op, n));
            break;
        }
        case 'G': {
            const uint64_t be = u64("a BINFLOAT");
            const double d = std::bit_cast<double>(__builtin_bswap64(be));
            m_doc.m_floats.push_back(d);
            m_stack.push_back(Value::make(Tag::Float, m_doc.m_floats.size() - 1));
            break;
        }
        case 0x8c: { const uint8_t n = u8("the SHORT_BINUNICODE length"); m_stack.push_back(makeString(op, n, Tag::Str)); break; }
        case 'X': { const uint32_t n = u32("the BINUNICODE length"); m_stack.push_back(makeString(op, n, Tag::Str)); break; }
        case 0x8d: { const uint64_t n = u64("the BINUNICODE8 length"); m_stack.push_back(makeString(op, n, Tag::Str)); break; }
        case 'C': { const uint8_t n = u8("the SHORT_BINBYTES length"); m_stack.push_back(makeString(op, n, Tag::Bytes)); break; }
        case 'B': { const uint32_t n = u32("the BINBYTES length"); m_stack.push_back(makeString(op, n, Tag::Bytes)); break; }
        case 0x8e: case 0x96: { const uint64_t n = u64("the BINBYTES8/BYTEARRAY8 length"); m_stack.push_back(makeString(op, n, Tag::Bytes)); break; }
        case 'N': m_stack.push_back(Value::make(Tag::None, 0)); break;
        case 0x88: m_stack.push_back(Value::make(Tag::Bool, 1)); break;
        case 0x89: m_stack.push_back(Value::make(Tag::Bool, 0)); break;
        case '0': pop(op); break; // POP
        case '1': m_stack.resize(popMark(op)); break; // POP_MARK
        case '2': m_stack.push_back(top(op)); break; // DUP
        default: {
            if (const char* name = refusedOpcodeName(code))
                fail(op, std::string("pickle opcode ") + name +
                             " would import or construct a Python object; this file is not a memory snapshot "
                             "and was refused (nothing was executed)");
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", code);
            fail(op, std::string("unsupported pickle opcode ") + hex +
                         "; expected one of the opcodes PyTorch memory snapshots use");
        }
        }
    }
}

} // namespace detail

void PickleReader::parse(PickleDocument& doc, const uint8_t* data, size_t size, const std::string& fileName,
                         const Options& options)
{
    detail::PickleParser parser(doc, data, size, fileName, options);
    parser.run();
}

} // namespace headroom
