// SPDX-License-Identifier: MIT
// PickleParser's conversions: containers as they complete (frame dicts, frame lists, trace
// entries), strings, long integers and the memo. The opcode loop is in picklereader.cpp.
#include "core/io/pickleparser.h"

#include "core/io/recordedtensorreader.h"

#include "core/util/utf8.h"

#include <limits>
#include <unordered_map>

namespace headroom::detail {

namespace {

using Value = PickleValue;
using Tag = PickleValue::Tag;

/// A float where an integer belongs (a time, or a size written as 1e30): its integer value,
/// or INT64_MAX beyond int64 so that the loader's range check refuses it by name. Casting a
/// value outside int64 (or NaN) is undefined behaviour (found by fuzz_pickle_reader).
int64_t intFromFloat(double d)
{
    if (!(d > -9.0e18 && d < 9.0e18))
        return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(d);
}

std::string hexByte(uint8_t b)
{
    static const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
}

} // namespace

Word classifyWord(std::string_view s)
{
    static const std::unordered_map<std::string_view, Word> kWords = {
        {"action", Word::Action}, {"addr", Word::Addr}, {"size", Word::Size}, {"stream", Word::Stream},
        {"time_us", Word::TimeUs}, {"frames", Word::Frames}, {"cpp_frames", Word::CppFrames},
        {"device_free", Word::DeviceFree}, {"compile_context", Word::CompileContext},
        {"user_metadata", Word::UserMetadata}, {"headroom_tensor", Word::HeadroomTensor}, {"filename", Word::Filename}, {"line", Word::Line},
        {"name", Word::Name}, {"forward_frames", Word::ForwardFrames}, {"pool_id", Word::PoolId},
        {"fx_node_op", Word::FxNodeOp}, {"fx_node_name", Word::FxNodeName}, {"fx_node_target", Word::FxNodeTarget},
        {"fx_original_trace", Word::FxOriginalTrace},
    };
    auto it = kWords.find(s);
    return it == kWords.end() ? Word::Other : it->second;
}

void PickleParser::truncated(const char* what) const
{
    fail(m_p, std::string("unexpected end of file while reading ") + what + "; the file is truncated");
}

std::vector<Value>& PickleParser::storageFor(uint64_t container)
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

Value PickleParser::makeTuple(const Value* first, size_t n)
{
    Value t = newContainer(Tag::Tuple);
    if (n > 0) {
        auto& st = storageFor(t.payload());
        for (size_t i = 0; i < n; ++i)
            st.push_back(m_doc.resolve(first[i]));
    }
    return t;
}

Value PickleParser::makeString(const uint8_t* at, uint64_t len, Tag tag)
{
    if (static_cast<uint64_t>(m_end - m_p) < len)
        fail(at, "string length " + std::to_string(len) + " runs past the end of the file; the file is truncated");
    if (tag == Tag::Str) {
        // Found by the bad-input corpus: a flipped byte in a frame name reached the JSON
        // output as invalid UTF-8 and nlohmann::json threw from dump().
        if (const size_t bad = utf8InvalidAt(m_p, len); bad != len)
            fail(m_p + bad, "invalid UTF-8 in a string (byte 0x" + hexByte(m_p[bad]) + "); the file is corrupt");
    }
    const auto id = m_doc.m_strings.size();
    m_doc.m_strings.push_back({static_cast<uint64_t>(m_p - m_begin), len});
    m_wordCache.push_back(Word::Unclassified);
    m_actionCache.push_back(0xff);
    m_p += len;
    return Value::make(tag, id);
}

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
    if (index == m_memo.size()) { // MEMOIZE, and BINPUT of a Python pickler: the next index
        m_memo.push_back(v);
        ++m_memoCount;
    } else if (index < m_memo.size()) {
        if (m_memo[index] == kUnset)
            ++m_memoCount;
        else
            m_runCache.clear(); // an overwritten entry: cached runs may name it
        m_memo[index] = v;
    } else if (index <= m_memo.size() + 4096) {
        m_memo.resize(index + 1, kUnset);
        m_memo[index] = v;
        ++m_memoCount;
    } else {
        // Sparse: a far-away index must not make us allocate gigabytes.
        if (m_sparseMemo.insert_or_assign(index, v).second)
            ++m_memoCount;
        else
            m_runCache.clear();
    }
}

Value PickleParser::memoGetSparse(const uint8_t* op, uint64_t index)
{
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
    FxFrameText fx;
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
        case Word::FxNodeOp: fx.op = m_doc.asString(kv[i + 1]).value_or(""); break;
        case Word::FxNodeName: fx.node = m_doc.asString(kv[i + 1]).value_or(""); break;
        case Word::FxNodeTarget: fx.target = m_doc.asString(kv[i + 1]).value_or(""); break;
        case Word::FxOriginalTrace: fx.originalTrace = m_doc.asString(kv[i + 1]).value_or(""); break;
        default:
            break; // fx_node_info and other extras: not shown
        }
    }
    if (!haveFile || !haveName)
        return false;
    const uint32_t id = m_doc.m_frames->internFrame(file, line, name);
    if (!fx.empty())
        m_doc.m_frames->setFx(id, fx);
    m_doc.m_slots[container] = {Tag::Frame, id};
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
        case Word::ForwardFrames:
            if (auto s = m_doc.joinedStrings(v); s && !s->empty())
                ev.forwardFrames.emplace_back(index, m_doc.m_frames->strings().intern(*s));
            break;
        case Word::PoolId:
            if (auto p = m_doc.intPair(v); p && *p != std::pair<int64_t, int64_t>{0, 0})
                ev.poolIds.emplace_back(index, *p);
            break;
        case Word::HeadroomTensor:
            if (auto t = readRecordedTensor(m_doc, v, m_doc.m_frames->strings()))
                ev.tensors.emplace_back(index, std::move(*t));
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
        if (op == m_pendingRun.end) // the run tryCachedStack() saw: next time it is a lookup
            m_runCache.insert(m_pendingRun.begin, static_cast<size_t>(m_pendingRun.end - m_pendingRun.begin),
                              m_pendingRun.hash, slot.payload);
    } else if (n > 0) {
        auto& st = storageFor(target.payload());
        st.insert(st.end(), items, items + n);
    }
    m_stack.resize(from);
}

} // namespace headroom::detail

namespace headroom::detail {

bool PickleParser::tryCachedStack()
{
    if (m_stack.empty())
        return false;
    const Value list = m_stack.back();
    if (list.tag() != Tag::List)
        return false;
    PickleDocument::Slot& slot = m_doc.m_slots[list.payload()];
    if (slot.kind != Tag::List || slot.payload != PickleDocument::kNoStorage)
        return false;
    const uint8_t* q = m_p;
    while (q < m_end) {
        if (*q == 'j' && m_end - q >= 5)
            q += 5;
        else if (*q == 'h' && m_end - q >= 2)
            q += 2;
        else
            break;
    }
    if (q == m_p || q >= m_end || *q != 'e')
        return false;
    const size_t n = static_cast<size_t>(q - m_p);
    const uint64_t h = StackRunCache::hashRun(m_p, n);
    if (const uint32_t stack = m_runCache.find(m_p, n, h); stack != StackRunCache::kMissing) {
        slot = {Tag::Stack, stack};
        m_p = q + 1;
        return true;
    }
    m_pendingRun = {m_p, q, h};
    return false;
}

} // namespace headroom::detail
