// SPDX-License-Identifier: MIT
#include "core/native/sectionreader.h"

#include "core/util/loaderror.h"

#include <zstd.h>

namespace headroom {

namespace {

/// The most raw bytes per stored byte assumed before anything is allocated. zstd at level 3
/// packs a real million-event trace about 60:1; beyond this ratio arrays still load, they
/// just grow as their data arrives instead of being sized once.
constexpr uint64_t kPlausibleRatio = 1024;
/// zstd may hold up to a block of decoded bytes it has not handed out yet.
constexpr uint64_t kZstdBlock = 1u << 17;

size_t freeDctx(ZSTD_DCtx* d)
{
    return ZSTD_freeDCtx(d);
}

} // namespace

SectionReader::SectionReader(const std::string& file, std::string where, const uint8_t* payload, size_t stored,
                             uint64_t rawSize, bool compressed)
    : m_file(file), m_where(std::move(where)), m_in(payload), m_stored(stored), m_raw(rawSize),
      m_compressed(compressed), m_dctx(nullptr, &freeDctx)
{
    if (m_compressed) {
        m_dctx.reset(ZSTD_createDCtx());
        if (!m_dctx)
            throw LoadError(m_file, LoadError::kNoOffset, m_where + ": cannot create the zstd decoder");
    }
}

SectionReader::~SectionReader() = default;

void SectionReader::fail(const std::string& what) const
{
    throw LoadError(m_file, LoadError::kNoOffset, m_where + ", byte " + std::to_string(m_pos) + ": " + what);
}

void SectionReader::corrupt(const std::string& why) const
{
    fail("corrupt zstd data (" + why + ")");
}

void SectionReader::need(uint64_t k) const
{
    if (m_raw - m_pos < k)
        fail("expected " + std::to_string(k) + " more bytes, the section ends after " + std::to_string(m_raw - m_pos) +
             "; the file is corrupt or truncated");
}

void SectionReader::needCount(uint64_t n, size_t each) const
{
    if (n > (m_raw - m_pos) / each)
        fail("a count of " + std::to_string(n) + " items needs at least " + std::to_string(each) +
             " bytes each but the section has " + std::to_string(m_raw - m_pos) + " left; the file is corrupt");
}

size_t SectionReader::plausibleCount(size_t each) const
{
    uint64_t bytes = m_raw - m_pos;
    if (m_compressed)
        bytes = std::min<uint64_t>(bytes, (uint64_t(m_stored - m_inPos) + 1) * kPlausibleRatio + kZstdBlock);
    return static_cast<size_t>(bytes / each);
}

void SectionReader::read(void* dst, size_t k)
{
    need(k);
    if (k == 0)
        return;
    if (m_compressed)
        inflate(static_cast<uint8_t*>(dst), k);
    else
        std::memcpy(dst, m_in + m_pos, k);
    m_pos += k;
}

void SectionReader::inflate(uint8_t* dst, size_t k)
{
    ZSTD_outBuffer out{dst, k, 0};
    while (out.pos < out.size) {
        ZSTD_inBuffer in{m_in, m_stored, m_inPos};
        const size_t before = out.pos;
        const size_t ret = ZSTD_decompressStream(m_dctx.get(), &out, &in);
        if (ZSTD_isError(ret))
            corrupt(ZSTD_getErrorName(ret));
        const bool progressed = in.pos != m_inPos || out.pos != before;
        m_inPos = in.pos;
        m_lastRet = ret; // 0: a frame ended (another may follow while input remains)
        if (!progressed)
            corrupt("the data ends early");
    }
}

void SectionReader::skip(uint64_t k)
{
    need(k);
    if (!m_compressed) {
        m_pos += k;
        return;
    }
    std::vector<uint8_t> scratch(static_cast<size_t>(std::min<uint64_t>(k, 1u << 16)));
    while (k > 0) {
        const size_t step = static_cast<size_t>(std::min<uint64_t>(k, scratch.size()));
        read(scratch.data(), step);
        k -= step;
    }
}

std::string SectionReader::str()
{
    const uint32_t len = get<uint32_t>();
    std::string s;
    readArray(s, len);
    return s;
}

std::string SectionReader::rest()
{
    std::string s;
    readArray(s, static_cast<size_t>(m_raw - m_pos));
    return s;
}

void SectionReader::finish()
{
    if (m_pos != m_raw)
        skip(m_raw - m_pos);
    if (!m_compressed)
        return;
    // Every claimed byte was produced; the stream must end here, with no byte more.
    while (!(m_lastRet == 0 && m_inPos == m_stored)) {
        uint8_t extra;
        ZSTD_outBuffer out{&extra, 1, 0};
        ZSTD_inBuffer in{m_in, m_stored, m_inPos};
        const size_t ret = ZSTD_decompressStream(m_dctx.get(), &out, &in);
        if (ZSTD_isError(ret))
            corrupt(ZSTD_getErrorName(ret));
        if (out.pos > 0)
            corrupt("more data than the " + std::to_string(m_raw) + " bytes the header claims");
        if (in.pos == m_inPos)
            corrupt("the data ends early");
        m_inPos = in.pos;
        m_lastRet = ret;
    }
}

} // namespace headroom
