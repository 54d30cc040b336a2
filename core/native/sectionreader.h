// SPDX-License-Identifier: MIT
#pragma once

#include "core/util/hugepages.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct ZSTD_DCtx_s;

namespace headroom {

/// Bounds-checked, sequential reading of one .hrt section payload (docs/native-format.md),
/// stored or zstd-compressed. A compressed payload is decompressed on demand straight into
/// the memory the caller reads into: a million-event device section never exists twice in
/// memory (a section-sized buffer and a copy cost more than the columns themselves).
///
/// Sizes in the file are claims. Nothing is sized by a claim beyond what the stored bytes
/// can plausibly hold (found by fuzzing: a 60 GiB raw-size claim allocated 60 GiB); arrays
/// larger than that grow as their data actually arrives. Errors are LoadErrors that name
/// the file, the section and the byte offset in the section's payload.
class SectionReader {
public:
    SectionReader(const std::string& file, std::string where, const uint8_t* payload, size_t stored,
                  uint64_t rawSize, bool compressed);
    ~SectionReader();
    SectionReader(const SectionReader&) = delete;
    SectionReader& operator=(const SectionReader&) = delete;

    [[noreturn]] void fail(const std::string& what) const;
    /// Fails unless `k` more bytes are claimed by the section header.
    void need(uint64_t k) const;
    /// A count read from the file must be backed by bytes (each item takes at least `each`).
    void needCount(uint64_t n, size_t each) const;
    /// How many items of `each` bytes may be allocated up front for the rest of the section:
    /// what the remaining stored bytes can plausibly hold. Larger arrays grow as read.
    size_t plausibleCount(size_t each) const;

    /// Exactly `k` bytes into `dst`, or a LoadError.
    void read(void* dst, size_t k);
    void skip(uint64_t k);
    template <typename T>
    T get()
    {
        T v;
        read(&v, sizeof(T));
        return v;
    }
    /// u32 byte length + bytes.
    std::string str();
    /// `count` elements (little-endian host) into `out` (a std::vector or std::string), which is
    /// resized to count: in one step when the stored bytes can hold them, else doubling as read.
    template <typename Container>
    void readArray(Container& out, size_t count)
    {
        using T = typename Container::value_type;
        need(uint64_t(count) * sizeof(T));
        out.clear();
        const size_t first = std::min(count, std::max<size_t>(plausibleCount(sizeof(T)), 1u << 12));
        reserveHuge(out, first);
        size_t done = 0;
        for (size_t step = first; done < count; step = std::min(count, done * 2)) {
            out.resize(step);
            read(out.data() + done, (step - done) * sizeof(T));
            done = step;
        }
    }
    /// Everything left, as bytes (text sections).
    std::string rest();

    uint64_t position() const { return m_pos; }
    bool atEnd() const { return m_pos == m_raw; }
    /// After the last read: a compressed payload must end exactly where its header says.
    void finish();

private:
    void inflate(uint8_t* dst, size_t k);
    [[noreturn]] void corrupt(const std::string& why) const;

    const std::string& m_file;
    std::string m_where;
    const uint8_t* m_in;
    size_t m_stored;
    uint64_t m_raw;
    bool m_compressed;
    uint64_t m_pos = 0;     ///< payload bytes read (after decompression)
    size_t m_inPos = 0;     ///< compressed bytes consumed
    std::unique_ptr<ZSTD_DCtx_s, size_t (*)(ZSTD_DCtx_s*)> m_dctx;
    size_t m_lastRet = 1;   ///< zstd: 0 once a frame is complete
};

} // namespace headroom
