// SPDX-License-Identifier: MIT
#include "app/tracecache.h"

#include "core/whatif/query/whatifsession.h"

#include <algorithm>

namespace headroom::cli {

namespace fs = std::filesystem;

namespace {

/// Everything a calibration depends on besides the file, as text.
std::string calibrationKey(size_t index, const StatedConfig& st, const ModelDims& d)
{
    auto opt = [](const auto& v) { return v ? std::to_string(int(*v)) : std::string("-"); };
    return std::to_string(index) + "|" + opt(st.microBatch) + "|" + opt(st.seq) + "|" + opt(st.devices) + "|" +
           opt(st.accum) + "|" + opt(st.precision) + "|" + opt(st.optimizer) + "|" + d.name + "|" +
           std::to_string(d.params) + "|" + std::to_string(d.layers) + "|" + std::to_string(d.hidden) + "|" +
           std::to_string(d.heads) + "|" + std::to_string(d.ffn) + "|" + std::to_string(d.vocab);
}

} // namespace

TraceCache::TraceCache(size_t maxEvents, std::vector<fs::path> roots)
    : m_maxEvents(maxEvents)
{
    for (const fs::path& r : roots) {
        std::error_code ec;
        const fs::path c = fs::weakly_canonical(r, ec);
        m_roots.push_back(ec ? r : c);
    }
}

fs::path TraceCache::canonical(const std::string& path) const
{
    std::error_code ec;
    if (path.empty())
        throw CommandError("file: expected the path of a snapshot or trace, got an empty string");
    if (!fs::is_regular_file(path, ec))
        throw CommandError(path +
                           ": no such file; expected a PyTorch memory snapshot (.pickle), a trace or a .hrt file");
    const fs::path c = fs::canonical(path, ec);
    if (ec)
        throw CommandError(path + ": " + ec.message());
    if (m_roots.empty())
        return c;
    for (const fs::path& root : m_roots) {
        const auto [r, p] = std::mismatch(root.begin(), root.end(), c.begin(), c.end());
        if (r == root.end())
            return c;
    }
    throw CommandError(path + ": outside the directories this server may read (--root)");
}

TraceCache::Entry& TraceCache::entry(const std::string& path)
{
    const fs::path c = canonical(path);
    std::error_code ec;
    const auto mtime = fs::last_write_time(c, ec);
    const uintmax_t size = fs::file_size(c, ec);
    for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
        if (it->path != c.string())
            continue;
        if (it->mtime == mtime && it->size == size) {
            m_entries.splice(m_entries.begin(), m_entries, it); // most recently used
            return m_entries.front();
        }
        m_entries.erase(it); // changed on disk: load it again
        break;
    }
    Entry e;
    e.path = c.string();
    e.mtime = mtime;
    e.size = size;
    e.trace = loadTrace(e.path);
    for (const DeviceData& d : e.trace->snapshot.devices)
        e.events += d.trace.count();
    m_entries.push_front(std::move(e));
    evict();
    return m_entries.front();
}

void TraceCache::evict()
{
    size_t events = 0;
    for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
        events += it->events;
        if (it != m_entries.begin() && events > m_maxEvents) {
            m_entries.erase(it, m_entries.end());
            return;
        }
    }
}

std::shared_ptr<const LoadedTrace> TraceCache::load(const std::string& path)
{
    return entry(path).trace;
}

TraceSource TraceCache::source()
{
    return [this](const std::string& path) { return load(path); };
}

const DeviceAnalysis& TraceCache::analysisOf(Entry& e, size_t index)
{
    auto& slot = e.analyses[index];
    if (!slot)
        slot = std::make_shared<const DeviceAnalysis>(analyzeDevice(*e.trace, index));
    return *slot;
}

std::shared_ptr<const DeviceAnalysis> TraceCache::analysis(const std::string& path, size_t index)
{
    Entry& e = entry(path);
    analysisOf(e, index);
    return e.analyses[index];
}

std::shared_ptr<const DeviceReport> TraceCache::report(const std::string& path, size_t index, int64_t capacity)
{
    Entry& e = entry(path);
    auto& slot = e.reports[{index, capacity}];
    if (!slot) {
        DeviceReportOptions options;
        if (capacity > 0)
            options.capacity = capacity;
        slot = std::make_shared<const DeviceReport>(DeviceReport::compute(*e.trace, index, options));
    }
    return slot;
}

std::shared_ptr<const Calibration> TraceCache::calibration(const std::string& path, size_t index,
                                                           const StatedConfig& stated, const ModelDims& dims)
{
    Entry& e = entry(path); // one look at the file on disk, not one per cached piece
    auto& slot = e.calibrations[calibrationKey(index, stated, dims)];
    if (!slot) {
        WhatIfQuery q; // the session's calibration, kept for the next whatif or ladder on the file
        q.measured = {e.trace, stated, nullptr};
        q.device = index;
        q.analysis = std::shared_ptr<const DeviceAnalysis>(std::shared_ptr<void>(), &analysisOf(e, index));
        q.dims = dims;
        slot = std::make_shared<const Calibration>(*WhatIfSession(q).calibration());
    }
    return slot;
}

std::vector<TraceCache::Open> TraceCache::open() const
{
    std::vector<Open> out;
    for (const Entry& e : m_entries)
        out.push_back({e.path, e.trace->snapshot.format, e.trace->snapshot.devices.size()});
    return out;
}

std::optional<std::string> TraceCache::openPath(const std::string& path) const
{
    for (const Entry& e : m_entries)
        if (e.path == path)
            return e.path;
    return std::nullopt;
}

} // namespace headroom::cli
