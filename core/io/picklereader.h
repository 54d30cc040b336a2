// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/pickledocument.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace headroom {

/// Progress callback: bytes consumed and total. Called at most every 64 Ki opcodes.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// A safe reader for the pickle subset of docs/formats.md (protocols 2 to 5, Python's
/// and the TorchScript C++ pickler's encodings). It never executes anything: opcodes
/// that import or construct Python objects are refused with a LoadError.
///
/// It fills a PickleDocument as it goes, converting frame dicts, frame lists and
/// trace-entry dicts into interned frames, stacks and flat event arrays the moment
/// they are complete (a streaming design: no per-event object tree).
class PickleReader {
public:
    struct Options {
        ProgressFn progress;
        const std::atomic<bool>* cancel = nullptr;
        /// Called now and then with the offset below which the parser will not read the
        /// input again (Loader releases those pages of a mapped file).
        std::function<void(size_t)> consumed;
    };

    /// Parses `size` bytes at `data` (which must outlive the document: strings point into it).
    /// Throws LoadError (with `fileName` and the byte offset) or LoadCancelled.
    static void parse(PickleDocument& doc, const uint8_t* data, size_t size, const std::string& fileName,
                      const Options& options);
};

} // namespace headroom
