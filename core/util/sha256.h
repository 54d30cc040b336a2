// SPDX-License-Identifier: MIT
#pragma once

// SHA-256 (FIPS 180-4) of a file's bytes: the budget store knows a run by its file's hash, so
// recording the same file twice adds nothing. A hash, not a check of anyone's signature.

#include <cstddef>
#include <cstdint>
#include <string>

namespace headroom {

class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t size);
    std::string hexDigest(); ///< 64 lowercase hex digits; the object is spent afterwards

private:
    void block(const uint8_t* p);
    uint32_t m_h[8];
    uint8_t m_buf[64];
    size_t m_used = 0;
    uint64_t m_bits = 0;
};

/// The hex SHA-256 of the file at `path`; throws LoadError naming the file when it cannot be read.
std::string sha256OfFile(const std::string& path);

} // namespace headroom
