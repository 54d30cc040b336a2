// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// The bytes of one input file, after undoing its transport encoding.
///
/// Plain files are memory-mapped (no copy, pages are shared with the page cache);
/// gzip and zstd streams are inflated into an owned buffer under a size limit so a
/// compression bomb cannot exhaust memory; a `_memory_viz` HTML page has its
/// embedded base64 pickle decoded. `encoding()` says which of these happened.
class InputBuffer {
public:
    enum class Encoding { Plain, Gzip, Zstd, HtmlEmbedded };

    /// Default ceiling for decompressed data (bytes).
    static constexpr uint64_t kDefaultMaxInflated = 16ull << 30;

    static InputBuffer open(const std::string& path, uint64_t maxInflated = kDefaultMaxInflated);
    static InputBuffer fromBytes(std::string name, std::vector<uint8_t> bytes,
                                 uint64_t maxInflated = kDefaultMaxInflated);

    InputBuffer(InputBuffer&&) noexcept;
    InputBuffer& operator=(InputBuffer&&) noexcept;
    ~InputBuffer();

    const uint8_t* data() const { return m_data; }
    size_t size() const { return m_size; }
    std::string_view view() const { return {reinterpret_cast<const char*>(m_data), m_size}; }
    const std::string& path() const { return m_path; }
    Encoding encoding() const { return m_encoding; }
    uint64_t fileSize() const { return m_fileSize; }

    /// Gives the pages of [0, upTo) back to the kernel when the data is a read-only
    /// mapping of the file (a later read of them faults them in again from the file);
    /// does nothing for owned (inflated) data. Sequential readers call it behind them so
    /// that resident memory follows the model being built, not the size of the file.
    void releaseBefore(size_t upTo) const;

private:
    InputBuffer() = default;
    void decodeTransport(uint64_t maxInflated);
    void adopt(std::vector<uint8_t>&& bytes);

    std::string m_path;
    const uint8_t* m_data = nullptr;
    size_t m_size = 0;
    uint64_t m_fileSize = 0;
    void* m_map = nullptr;
    size_t m_mapSize = 0;
    std::vector<uint8_t> m_owned;
    Encoding m_encoding = Encoding::Plain;
};

const char* encodingName(InputBuffer::Encoding e);

} // namespace headroom
