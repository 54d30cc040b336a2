// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <atomic>
#include <stdexcept>
#include <string>

namespace headroom {

/// Thrown by every reader and importer for bad input. The message always names
/// the file, the byte offset (or a path inside the document) and what was expected,
/// so the CLI and the GUI can show it as is.
class LoadError : public std::runtime_error {
public:
    static constexpr int64_t kNoOffset = -1;

    LoadError(std::string file, int64_t offset, std::string what);

    const std::string& file() const { return m_file; }
    int64_t offset() const { return m_offset; }
    const std::string& detail() const { return m_detail; }

private:
    std::string m_file;
    int64_t m_offset;
    std::string m_detail;
};

/// Thrown when the user cancelled a load or the analysis of what was loaded (another file
/// or device was asked for); not an error to report.
class LoadCancelled : public std::runtime_error {
public:
    LoadCancelled() : std::runtime_error("load cancelled") {}
};

/// Long work checks its caller's flag between stages: throws LoadCancelled once it is set.
inline void throwIfCancelled(const std::atomic<bool>* cancel)
{
    if (cancel && cancel->load(std::memory_order_relaxed))
        throw LoadCancelled();
}

} // namespace headroom
