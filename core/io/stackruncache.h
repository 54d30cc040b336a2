// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom {

/// Frame lists by their bytes in the pickle. Python's pickler writes every traceback as a
/// fresh list: EMPTY_LIST, MEMOIZE, MARK, one BINGET/LONG_BINGET per frame (the frame dicts
/// are memoized), APPENDS. A million trace entries that share a few hundred tracebacks
/// repeat the same few hundred byte runs. The reader looks the run between MARK and APPENDS
/// up here before reading it: a hit gives the interned stack at once, so the 30-50 memo
/// reads, the value-stack pushes and the stack hash of that traceback are skipped.
///
/// A run means the same stack only while the memo entries it names keep their values:
/// the reader clears the cache when a memo entry is overwritten (no pickler does that).
class StackRunCache {
public:
    static constexpr uint32_t kMissing = 0xffffffffu;

    /// The stack id for the run [p, p + n) with hash `h` (hashRun), or kMissing.
    uint32_t find(const uint8_t* p, size_t n, uint64_t h) const;
    /// Remembers a run's stack (copies the bytes; stops growing past a size limit).
    void insert(const uint8_t* p, size_t n, uint64_t h, uint32_t stack);
    void clear();

    static uint64_t hashRun(const uint8_t* p, size_t n);

private:
    struct Entry {
        uint64_t hash;
        uint64_t offset; // into m_bytes
        uint32_t length;
        uint32_t stack;
    };
    void grow();

    std::vector<Entry> m_entries;
    std::vector<uint32_t> m_slots; // entry index + 1; 0 = free
    std::vector<uint8_t> m_bytes;
};

} // namespace headroom
