// SPDX-License-Identifier: MIT
#pragma once

// Is this capture good enough? Looks at a loaded file for what it cannot
// show (a cut history, memory from before recording, missing stacks, phases, OOM record,
// allocator settings, ...) and says, for each, how to record a file that can: the
// recording helper's options (python/headroom_record.py) or the PyTorch call. The CLI
// prints the findings (`headroom-cli doctor`); the GUI can show the same list as a banner.

#include "core/replay/loadedtrace.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

struct CaptureFinding {
    /// Warning: the file cannot show something a postmortem needs (where memory came from,
    /// the whole history, a device). Info: a detail is missing; the analysis still stands.
    enum class Severity { Warning, Info };

    /// Stable identifier, e.g. "history_truncated" (the `kind` of `doctor --json`).
    std::string kind;
    Severity severity = Severity::Info;
    std::vector<int> devices; ///< device ordinals concerned; empty: the whole file
    std::string message;      ///< one line: what the file cannot show, with the numbers
    std::string fix;          ///< the exact recording option or call that avoids it
    /// The figures behind the message (name, value), for scripts: counts and bytes.
    std::vector<std::pair<std::string, int64_t>> data;
};

const char* severityName(CaptureFinding::Severity s); ///< "warning", "info"

class CaptureDoctor {
public:
    /// Every finding for `trace`, warnings first, in a fixed order of kinds.
    static std::vector<CaptureFinding> examine(const LoadedTrace& trace);

    /// Every kind examine() can return, in its order (documentation and tests).
    static const std::vector<std::string>& kinds();

    /// The pickle protocol of a snapshot read from a pickle (from Snapshot::format, which
    /// the loader writes from PickleDocument::protocol()); 0 when the file is not one.
    static int pickleProtocol(const Snapshot& snapshot);
};

} // namespace headroom
