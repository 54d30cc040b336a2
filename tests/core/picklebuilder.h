// SPDX-License-Identifier: MIT
// A tiny pickle writer for tests: emits exactly the opcodes asked for.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace headroom::test {

struct PickleBuilder {
    std::vector<uint8_t> b;
    PickleBuilder& op(uint8_t c) { b.push_back(c); return *this; }
    PickleBuilder& u32(uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); return *this; }
    PickleBuilder& u64(uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i))); return *this; }
    PickleBuilder& proto(int p) { return op(0x80).op(uint8_t(p)); }
    PickleBuilder& str(const std::string& s)
    {
        if (s.size() < 256) { op(0x8c).op(uint8_t(s.size())); }
        else { op('X').u32(uint32_t(s.size())); }
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    PickleBuilder& binint(int32_t v) { return op('J').u32(uint32_t(v)); }
    PickleBuilder& long1(const std::vector<uint8_t>& le) { op(0x8a).op(uint8_t(le.size())); b.insert(b.end(), le.begin(), le.end()); return *this; }
    PickleBuilder& emptyDict() { return op('}'); }
    PickleBuilder& emptyList() { return op(']'); }
    PickleBuilder& mark() { return op('('); }
    PickleBuilder& setitems() { return op('u'); }
    PickleBuilder& appends() { return op('e'); }
    PickleBuilder& memoize() { return op(0x94); }
    PickleBuilder& binget(uint8_t i) { return op('h').op(i); }
    PickleBuilder& longBinget(uint32_t i) { return op('j').u32(i); }
    PickleBuilder& binput(uint8_t i) { return op('q').op(i); }
    PickleBuilder& frame(uint64_t len) { return op(0x95).u64(len); }
    PickleBuilder& stop() { return op('.'); }
};

} // namespace headroom::test
