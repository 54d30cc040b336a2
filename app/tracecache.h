// SPDX-License-Identifier: MIT
#pragma once

// The MCP server's open files: loaded once, answered from memory while the file on disk is
// unchanged (keyed by its canonical path, modification time and size), evicted least
// recently used beyond a budget of trace entries so a long agent session cannot grow
// without bound. Each entry also keeps what the tools compute per device (the analysis, the
// report), the seconds of a 1M-event file that a repeated call must not pay again.

#include "app/clicommand.h"
#include "core/analysis/memoryanalysis.h"
#include "core/report/devicereport.h"
#include "core/whatif/calibration/whatifcalibration.h"

#include <cstdint>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

class TraceCache {
public:
    /// `maxEvents`: trace entries kept loaded in all (the newest file is kept even when it
    /// alone is larger); `roots`: when not empty, only files under one of them may be read.
    explicit TraceCache(size_t maxEvents = 20'000'000, std::vector<std::filesystem::path> roots = {});

    /// The loaded file (from memory when unchanged on disk). Throws CommandError naming the
    /// path when it is missing, outside the roots, or cannot be read.
    std::shared_ptr<const LoadedTrace> load(const std::string& path);
    TraceSource source();

    /// analyzeDevice of the device at position `index`, computed once per file.
    std::shared_ptr<const DeviceAnalysis> analysis(const std::string& path, size_t index);
    /// DeviceReport of the device at position `index` for a capacity (0: the file's), once.
    std::shared_ptr<const DeviceReport> report(const std::string& path, size_t index, int64_t capacity);

    /// The what-if calibration of the device at position `index` for what the caller states
    /// and the model dimensions it gives, once per file.
    std::shared_ptr<const Calibration> calibration(const std::string& path, size_t index, const StatedConfig& stated,
                                                   const ModelDims& dims);

    struct Open {
        std::string path; ///< canonical
        std::string format;
        size_t devices = 0;
    };
    /// Files loaded now, most recently used first.
    std::vector<Open> open() const;
    /// The canonical path of `path` when it is a file loaded now.
    std::optional<std::string> openPath(const std::string& path) const;

private:
    struct Entry {
        std::string path; ///< canonical
        std::filesystem::file_time_type mtime;
        uintmax_t size = 0;
        std::shared_ptr<const LoadedTrace> trace;
        size_t events = 0;
        std::map<size_t, std::shared_ptr<const DeviceAnalysis>> analyses;
        std::map<std::pair<size_t, int64_t>, std::shared_ptr<const DeviceReport>> reports;
        std::map<std::string, std::shared_ptr<const Calibration>> calibrations; ///< by calibrationKey()
    };
    Entry& entry(const std::string& path);
    static const DeviceAnalysis& analysisOf(Entry& e, size_t index);
    std::filesystem::path canonical(const std::string& path) const;
    void evict();

    size_t m_maxEvents;
    std::vector<std::filesystem::path> m_roots;
    std::list<Entry> m_entries; ///< most recently used first
};

} // namespace headroom::cli
