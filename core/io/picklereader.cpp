// SPDX-License-Identifier: MIT
// PickleReader: the opcode loop. The conversions it calls are in pickleparser.cpp.
#include "core/io/picklereader.h"

#include "core/io/pickleparser.h"
#include "core/util/hugepages.h"

#include <bit>
#include <cstdio>
#include <cstring>

namespace headroom {

namespace {

using Value = PickleValue;
using Tag = PickleValue::Tag;

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

void PickleParser::reserveGrowing()
{
    // Reserve by file size (real snapshots spend 100-200 bytes per trace entry): untouched
    // reserved pages cost no memory, and no vector is copied while it grows. Huge pages:
    // one fault per 2 MiB instead of per 4 KiB.
    const size_t bytes = static_cast<size_t>(m_end - m_begin);
    TraceEvents& ev = m_doc.m_events;
    reserveHuge(ev.action, bytes / 160);
    reserveHuge(ev.addr, bytes / 160);
    reserveHuge(ev.size, bytes / 160);
    reserveHuge(ev.stream, bytes / 160);
    reserveHuge(ev.timeUs, bytes / 160);
    reserveHuge(ev.stack, bytes / 160);
    reserveHuge(m_doc.m_eventActionString, bytes / 160);
    reserveHuge(m_doc.m_slots, bytes / 64);
    reserveHuge(m_memo, bytes / 64);
    if (bytes < (size_t(16) << 20))
        return; // a thread is not worth it below a few MB
    // Lead 2 MiB (one huge page, populated in 1 MiB steps): at most 18 MiB over the nine
    // arrays faulted in and not used; a longer lead measured no faster.
    m_prefault = std::make_unique<PagePrefaulter>(size_t(2) << 20);
    auto track = [&](const auto& v) { m_prefault->track(v.data(), v.capacity() * sizeof(v[0])); };
    track(ev.action);
    track(ev.addr);
    track(ev.size);
    track(ev.stream);
    track(ev.timeUs);
    track(ev.stack);
    track(m_doc.m_eventActionString);
    track(m_doc.m_slots);
    track(m_memo);
    // The input, read 8 MiB ahead: Loader releases what the parser has passed, so resident
    // memory stays a few MiB of the file however large it is.
    m_prefault->track(m_begin, bytes, PagePrefaulter::Access::Read, size_t(8) << 20);
    m_prefault->start();
}

void PickleParser::advancePrefault()
{
    // Same order as track() above.
    const TraceEvents& ev = m_doc.m_events;
    size_t r = 0;
    auto advance = [&](const auto& v) { m_prefault->advance(r++, v.data(), v.size() * sizeof(v[0])); };
    advance(ev.action);
    advance(ev.addr);
    advance(ev.size);
    advance(ev.stream);
    advance(ev.timeUs);
    advance(ev.stack);
    advance(m_doc.m_eventActionString);
    advance(m_doc.m_slots);
    advance(m_memo);
    m_prefault->advance(r, m_begin, static_cast<size_t>(m_p - m_begin));
    m_prefault->notify();
}

void PickleParser::checkpoint()
{
    if (m_prefault)
        advancePrefault();
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
    reserveGrowing();
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
        case '(': // MARK
            if (!tryCachedStack())
                m_marks.push_back(m_stack.size());
            break;
        case '}':
        case ']':
            // Counted here rather than per opcode: whether a BINPUT follows the empty container.
            ++m_emptyContainers;
            if (m_p < m_end && (*m_p == 'q' || *m_p == 'r'))
                ++m_containerPuts;
            m_stack.push_back(newContainer(code == '}' ? Tag::Dict : Tag::List));
            break;
        case ')': m_stack.push_back(newContainer(Tag::Tuple)); break;
        case 'd': { // DICT
            const size_t from = popMark(op);
            m_stack.insert(from, newContainer(Tag::Dict));
            setItems(op, from + 1);
            break;
        }
        case 'l': { // LIST
            const size_t from = popMark(op);
            m_stack.insert(from, newContainer(Tag::List));
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
        case 'h': case 'j': { // BINGET, LONG_BINGET
            // Memo reads come in runs (the 30-50 frames of a traceback are one each): the
            // run is read here rather than one trip through the switch per read, with the
            // cursor, the memo and the stack top in locals: through the members, every
            // store of a value made the compiler reload them all.
            const uint8_t* at = op;
            const uint8_t* const end = m_end;
            Value* const memo = m_memo.data();
            const size_t memoSize = m_memo.size();
            while (true) {
                uint64_t index;
                const uint8_t* next;
                if (*at == 'j') {
                    if (end - at < 5) {
                        m_p = at + 1;
                        need(4, "the LONG_BINGET index");
                    }
                    uint32_t k;
                    std::memcpy(&k, at + 1, 4);
                    index = k;
                    next = at + 5;
                } else {
                    if (end - at < 2) {
                        m_p = at + 1;
                        need(1, "the BINGET index");
                    }
                    index = at[1];
                    next = at + 2;
                }
                Value v;
                if (index < memoSize && memo[index].tag() != Tag::Mark) [[likely]] {
                    v = memo[index];
                    // Path compression: a converted frame dict or frame list is stored back
                    // as its Frame/Stack value, so later reads skip the slot lookup.
                    const Value r = m_doc.resolve(v);
                    if (!(r == v)) {
                        memo[index] = r;
                        v = r;
                    }
                } else {
                    m_p = next;
                    v = memoGetSparse(at, index);
                }
                m_stack.push_back(v);
                at = next;
                if (at >= end || (*at != 'h' && *at != 'j'))
                    break;
            }
            m_p = at;
            break;
        }
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
