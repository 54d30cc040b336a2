// SPDX-License-Identifier: MIT
#include "core/io/inputbuffer.h"

#include "core/util/loaderror.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <stdexcept>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headroom {

namespace {

std::string sizeText(uint64_t bytes)
{
    return std::to_string(bytes >> 20) + " MiB";
}

/// Grows an inflation buffer; running out of memory first is reported like hitting the limit
/// (found by the bad-input corpus: a 16 GiB gzip bomb under a 1 GiB memory limit ended in
/// a bare "out of memory"; in the GUI an unexpected bad_alloc is worse).
void growInflated(std::vector<uint8_t>& out, uint64_t size, const std::string& path, int64_t at, const char* kind)
{
    try {
        out.resize(size);
    } catch (const std::bad_alloc&) {
        throw LoadError(path, at, std::string(kind) + " stream inflates to more than " + sizeText(out.size()) +
                                      ", more memory than is available; refusing a possible compression bomb");
    } catch (const std::length_error&) {
        throw LoadError(path, at, std::string(kind) + " stream inflates past what this machine can address");
    }
}

std::vector<uint8_t> inflateGzip(const std::string& path, const uint8_t* data, size_t size, uint64_t maxOut)
{
    z_stream zs{};
    if (inflateInit2(&zs, 15 + 32) != Z_OK)
        throw LoadError(path, 0, "cannot initialise the gzip decoder");
    std::vector<uint8_t> out;
    out.resize(std::min<uint64_t>(std::max<uint64_t>(size * 4, 1 << 16), maxOut + 1));
    zs.next_in = const_cast<Bytef*>(data);
    size_t inLeft = size;
    size_t produced = 0;
    int rc = Z_OK;
    while (true) {
        if (produced == out.size()) {
            if (out.size() > maxOut) {
                inflateEnd(&zs);
                throw LoadError(path, static_cast<int64_t>(zs.total_in),
                                "gzip stream inflates to more than " + sizeText(maxOut) +
                                    " (the limit); refusing a possible compression bomb");
            }
            try {
                growInflated(out, std::min<uint64_t>(out.size() * 2, maxOut + 1), path,
                             static_cast<int64_t>(zs.total_in), "gzip");
            } catch (...) {
                inflateEnd(&zs);
                throw;
            }
        }
        const uInt chunkIn = static_cast<uInt>(std::min<size_t>(inLeft, 1u << 30));
        zs.avail_in = chunkIn;
        zs.next_out = out.data() + produced;
        zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
        const uInt availOutBefore = zs.avail_out;
        rc = inflate(&zs, Z_NO_FLUSH);
        inLeft -= chunkIn - zs.avail_in;
        produced += availOutBefore - zs.avail_out;
        if (rc == Z_STREAM_END) {
            // Concatenated gzip members: keep going if input remains.
            if (inLeft > 0 && zs.next_in[0] == 0x1f) {
                inflateReset(&zs);
                continue;
            }
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            const int64_t at = static_cast<int64_t>(zs.total_in);
            std::string msg = zs.msg ? zs.msg : "corrupt data";
            inflateEnd(&zs);
            throw LoadError(path, at, "corrupt gzip stream (" + msg + ")");
        }
        if (rc == Z_BUF_ERROR && inLeft == 0 && zs.avail_out > 0) {
            const int64_t at = static_cast<int64_t>(zs.total_in);
            inflateEnd(&zs);
            throw LoadError(path, at, "gzip stream ends early; the file is truncated");
        }
    }
    inflateEnd(&zs);
    out.resize(produced);
    return out;
}

std::vector<uint8_t> inflateZstd(const std::string& path, const uint8_t* data, size_t size, uint64_t maxOut)
{
    ZSTD_DStream* ds = ZSTD_createDStream();
    ZSTD_initDStream(ds);
    std::vector<uint8_t> out(std::min<uint64_t>(std::max<uint64_t>(size * 4, 1 << 16), maxOut + 1));
    ZSTD_inBuffer in{data, size, 0};
    size_t produced = 0;
    size_t lastRet = 1;
    while (in.pos < in.size || lastRet != 0) {
        if (produced == out.size()) {
            if (out.size() > maxOut) {
                ZSTD_freeDStream(ds);
                throw LoadError(path, static_cast<int64_t>(in.pos),
                                "zstd stream inflates to more than " + sizeText(maxOut) +
                                    " (the limit); refusing a possible compression bomb");
            }
            try {
                growInflated(out, std::min<uint64_t>(out.size() * 2, maxOut + 1), path,
                             static_cast<int64_t>(in.pos), "zstd");
            } catch (...) {
                ZSTD_freeDStream(ds);
                throw;
            }
        }
        ZSTD_outBuffer ob{out.data() + produced, out.size() - produced, 0};
        const size_t before = in.pos;
        lastRet = ZSTD_decompressStream(ds, &ob, &in);
        produced += ob.pos;
        if (ZSTD_isError(lastRet)) {
            const int64_t at = static_cast<int64_t>(in.pos);
            ZSTD_freeDStream(ds);
            throw LoadError(path, at, std::string("corrupt zstd stream (") + ZSTD_getErrorName(lastRet) + ")");
        }
        if (in.pos == in.size && ob.pos == 0 && before == in.pos && lastRet != 0) {
            ZSTD_freeDStream(ds);
            throw LoadError(path, static_cast<int64_t>(in.pos), "zstd stream ends early; the file is truncated");
        }
    }
    ZSTD_freeDStream(ds);
    out.resize(produced);
    return out;
}

int base64Value(uint8_t c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

std::vector<uint8_t> extractHtmlPickle(const std::string& path, std::string_view html)
{
    static constexpr std::string_view kKey = "\"base64\"";
    size_t pos = html.find(kKey);
    if (pos == std::string_view::npos) {
        if (html.find("data:image/png;base64") != std::string_view::npos)
            throw LoadError(path, static_cast<int64_t>(html.find("data:image/png;base64")),
                            "this HTML page holds only a picture of a memory timeline "
                            "(export_memory_timeline .html), not its data; export the .raw.json.gz or "
                            ".json.gz form instead");
        throw LoadError(path, 0, "HTML file without an embedded snapshot; expected a _memory_viz page with "
                                 "\"base64\": \"...\" inside local_files");
    }
    pos = html.find('"', pos + kKey.size());
    if (pos == std::string_view::npos)
        throw LoadError(path, static_cast<int64_t>(html.size()), "expected the opening quote of the base64 data");
    const size_t start = pos + 1;
    const size_t end = html.find('"', start);
    if (end == std::string_view::npos)
        throw LoadError(path, static_cast<int64_t>(html.size()),
                        "base64 data has no closing quote; the file is truncated");
    std::vector<uint8_t> out;
    out.reserve((end - start) / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = start; i < end; ++i) {
        const uint8_t c = static_cast<uint8_t>(html[i]);
        if (c == '=')
            break;
        if (c == '\\' && i + 1 < end && html[i + 1] == 'n') { ++i; continue; }
        if (c == '\n' || c == '\r' || c == ' ')
            continue;
        const int v = base64Value(c);
        if (v < 0)
            throw LoadError(path, static_cast<int64_t>(i), "invalid character in the embedded base64 data");
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
        }
    }
    return out;
}

bool looksLikeHtml(const uint8_t* data, size_t size)
{
    size_t i = 0;
    if (size >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF)
        i = 3;
    while (i < size && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
        ++i;
    return i < size && data[i] == '<';
}

} // namespace

const char* encodingName(InputBuffer::Encoding e)
{
    switch (e) {
    case InputBuffer::Encoding::Plain: return "plain";
    case InputBuffer::Encoding::Gzip: return "gzip";
    case InputBuffer::Encoding::Zstd: return "zstd";
    case InputBuffer::Encoding::HtmlEmbedded: return "html";
    }
    return "?";
}

InputBuffer InputBuffer::open(const std::string& path, uint64_t maxInflated)
{
    InputBuffer buf;
    buf.m_path = path;
    // O_NONBLOCK: opening a FIFO must not wait for a writer (found by the bad-input corpus:
    // `headroom-cli summary fifo` hung); only regular files are read below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw LoadError(path, LoadError::kNoOffset, std::string("cannot open: ") + std::strerror(errno));
    struct stat st{};
    if (fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw LoadError(path, LoadError::kNoOffset, std::string("cannot stat: ") + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw LoadError(path, LoadError::kNoOffset, "is a directory, expected a trace file");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw LoadError(path, LoadError::kNoOffset, "is not a regular file");
    }
    buf.m_fileSize = static_cast<uint64_t>(st.st_size);
    if (st.st_size == 0) {
        ::close(fd);
        throw LoadError(path, 0, "the file is empty; expected a memory snapshot or trace");
    }
    // Prefaulted: the whole file is read anyway; one prefault beats a page fault per 4 KiB.
    // Not for large files: readers release the pages behind them (releaseBefore), which
    // only keeps resident memory down if the pages were not all faulted in up front.
    const bool populate = st.st_size < (256 << 20);
#ifdef MADV_POPULATE_READ
    // In 1 MiB steps (below), not MAP_POPULATE: that holds the process's memory-map lock
    // while it faults in the whole file (46 ms for 184 MiB), and every mmap() another
    // thread makes meanwhile waits: the GUI thread's paint buffers, in the turn that
    // shows the panels when a load starts.
    constexpr int kPopulateFlag = 0;
#else
    const int kPopulateFlag = populate ? MAP_POPULATE : 0;
#endif
    void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | kPopulateFlag, fd, 0);
    if (map == MAP_FAILED) {
        // Fall back to reading (some filesystems cannot map).
        std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
        size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
            if (n <= 0) {
                const int err = errno;
                ::close(fd);
                throw LoadError(path, static_cast<int64_t>(got), std::string("read failed: ") + std::strerror(err));
            }
            got += static_cast<size_t>(n);
        }
        ::close(fd);
        buf.adopt(std::move(bytes));
    } else {
        ::close(fd);
        ::madvise(map, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
#ifdef MADV_POPULATE_READ
        if (populate) {
            constexpr size_t kStep = size_t(1) << 20;
            const auto size = static_cast<size_t>(st.st_size);
            for (size_t at = 0; at < size; at += kStep) // a hint: an error (an old kernel) only costs speed
                if (::madvise(static_cast<uint8_t*>(map) + at, std::min(kStep, size - at), MADV_POPULATE_READ) != 0)
                    break;
        }
#endif
        buf.m_map = map;
        buf.m_mapSize = static_cast<size_t>(st.st_size);
        buf.m_data = static_cast<const uint8_t*>(map);
        buf.m_size = buf.m_mapSize;
    }
    buf.decodeTransport(maxInflated);
    return buf;
}

void InputBuffer::releaseBefore(size_t upTo) const
{
    // Only a file mapping whose bytes are the data: MADV_DONTNEED on owned memory would
    // zero it.
    if (!m_map || m_data != m_map)
        return;
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t end = std::min(upTo, m_mapSize) / page * page;
    if (end > 0)
        ::madvise(m_map, end, MADV_DONTNEED);
}

InputBuffer InputBuffer::fromBytes(std::string name, std::vector<uint8_t> bytes, uint64_t maxInflated)
{
    InputBuffer buf;
    buf.m_path = std::move(name);
    buf.m_fileSize = bytes.size();
    if (bytes.empty())
        throw LoadError(buf.m_path, 0, "the file is empty; expected a memory snapshot or trace");
    buf.adopt(std::move(bytes));
    buf.decodeTransport(maxInflated);
    return buf;
}

void InputBuffer::adopt(std::vector<uint8_t>&& bytes)
{
    if (m_map) {
        ::munmap(m_map, m_mapSize);
        m_map = nullptr;
        m_mapSize = 0;
    }
    m_owned = std::move(bytes);
    m_data = m_owned.data();
    m_size = m_owned.size();
}

void InputBuffer::decodeTransport(uint64_t maxInflated)
{
    if (m_size >= 2 && m_data[0] == 0x1f && m_data[1] == 0x8b) {
        adopt(inflateGzip(m_path, m_data, m_size, maxInflated));
        m_encoding = Encoding::Gzip;
        if (m_size == 0)
            throw LoadError(m_path, 0, "the gzip stream is empty; expected a memory snapshot or trace");
    } else if (m_size >= 4 && m_data[0] == 0x28 && m_data[1] == 0xb5 && m_data[2] == 0x2f && m_data[3] == 0xfd) {
        adopt(inflateZstd(m_path, m_data, m_size, maxInflated));
        m_encoding = Encoding::Zstd;
        if (m_size == 0)
            throw LoadError(m_path, 0, "the zstd stream is empty; expected a memory snapshot or trace");
    }
    if (looksLikeHtml(m_data, m_size)) {
        adopt(extractHtmlPickle(m_path, view()));
        m_encoding = Encoding::HtmlEmbedded;
        if (m_size == 0)
            throw LoadError(m_path, 0, "the embedded base64 data is empty");
    }
}

InputBuffer::InputBuffer(InputBuffer&& o) noexcept
{
    *this = std::move(o);
}

InputBuffer& InputBuffer::operator=(InputBuffer&& o) noexcept
{
    if (this == &o)
        return *this;
    if (m_map)
        ::munmap(m_map, m_mapSize);
    m_path = std::move(o.m_path);
    m_fileSize = o.m_fileSize;
    m_encoding = o.m_encoding;
    m_map = o.m_map;
    m_mapSize = o.m_mapSize;
    const bool ownedData = !o.m_map;
    m_owned = std::move(o.m_owned);
    m_data = ownedData ? m_owned.data() : o.m_data;
    m_size = o.m_size;
    o.m_map = nullptr;
    o.m_mapSize = 0;
    o.m_data = nullptr;
    o.m_size = 0;
    return *this;
}

InputBuffer::~InputBuffer()
{
    if (m_map)
        ::munmap(m_map, m_mapSize);
}

} // namespace headroom
