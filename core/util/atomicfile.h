// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace headroom {

/// Thrown when a file cannot be written; the message names the file and the reason.
class SaveError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Crash-safe file replacement: the bytes go to a temporary file in the target's
/// directory, which is fsync'ed and then renamed over the target (and the directory
/// fsync'ed). A crash or kill at any point leaves either the old file or the new one,
/// never a mix; on failure the temporary file is removed and SaveError thrown.
/// On Linux the temporary is an unnamed O_TMPFILE, so a kill during the write leaves
/// nothing; it is named ".NAME.tmp.<hex>" only between the fsync and the rename, so a kill
/// there can leave a complete, hidden copy. Elsewhere ".NAME.tmp.XXXXXX" (mkstemp).
/// Tested by ctest atomic_save_kill (tests/tools/kill_save_test.py).
class AtomicFile {
public:
    static void write(const std::string& path, std::span<const uint8_t> bytes);
};

} // namespace headroom
