// SPDX-License-Identifier: MIT
#include "core/analysis/ranktable.h"

#include "core/util/units.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <sstream>

namespace headroom {

int RankTable::rankFromFileName(const std::string& path)
{
    std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
        size_t i = at + 4;
        if (i < name.size() && (name[i] == '_' || name[i] == '-'))
            ++i;
        size_t j = i;
        while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])) && j - i < 6)
            ++j;
        if (j > i)
            return std::stoi(name.substr(i, j - i));
    }
    return -1;
}

RankTable::RankTable(const std::vector<std::shared_ptr<const LoadedTrace>>& traces)
{
    for (size_t f = 0; f < traces.size(); ++f) {
        const LoadedTrace& t = *traces[f];
        const int fromName = rankFromFileName(t.snapshot.path);
        for (size_t i = 0; i < t.snapshot.devices.size(); ++i) {
            const DeviceData& d = t.snapshot.devices[i];
            if (d.deviceType == "cpu")
                continue;
            Row r;
            r.rank = d.rank >= 0 ? d.rank : fromName >= 0 ? fromName : static_cast<int>(f);
            r.device = d.device;
            r.deviceType = d.deviceType;
            r.file = t.snapshot.path;
            r.reservedBytes = t.timelines[i].peakReserved;
            r.peakAllocatedBytes = t.timelines[i].peakAllocated;
            r.ooms = d.ooms.size();
            m_rows.push_back(std::move(r));
        }
    }
    std::stable_sort(m_rows.begin(), m_rows.end(), [](const Row& a, const Row& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.device < b.device;
    });
}

namespace {

struct Spread {
    int64_t min = 0, max = 0;
    int minRank = 0, maxRank = 0;
};

template <typename F>
Spread spreadOf(const std::vector<RankTable::Row>& rows, F value)
{
    Spread s;
    for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t v = value(rows[i]);
        if (i == 0 || v < s.min) {
            s.min = v;
            s.minRank = rows[i].rank;
        }
        if (i == 0 || v > s.max) {
            s.max = v;
            s.maxRank = rows[i].rank;
        }
    }
    return s;
}

nlohmann::json spreadJson(const Spread& s)
{
    return {{"min", s.min}, {"max", s.max}, {"difference", s.max - s.min}, {"min_rank", s.minRank},
            {"max_rank", s.maxRank}, {"max_over_min", s.min > 0 ? static_cast<double>(s.max) / s.min : 0.0}};
}

} // namespace

nlohmann::json RankTable::toJson() const
{
    nlohmann::json rows = nlohmann::json::array();
    for (const Row& r : m_rows)
        rows.push_back({{"rank", r.rank}, {"device", r.device}, {"device_type", r.deviceType}, {"file", r.file},
                        {"reserved_peak_bytes", r.reservedBytes}, {"peak_allocated_bytes", r.peakAllocatedBytes},
                        {"oom", r.ooms}});
    nlohmann::json out;
    out["ranks"] = rows;
    out["spread"] = {{"peak_allocated_bytes", spreadJson(spreadOf(m_rows, [](const Row& r) { return r.peakAllocatedBytes; }))},
                     {"reserved_peak_bytes", spreadJson(spreadOf(m_rows, [](const Row& r) { return r.reservedBytes; }))}};
    return out;
}

std::string RankTable::toText() const
{
    std::ostringstream os;
    os << std::left << std::setw(6) << "rank" << std::setw(12) << "device" << std::right << std::setw(14)
       << "reserved" << std::setw(16) << "peak allocated" << std::setw(6) << "OOM" << "  file\n";
    for (const Row& r : m_rows)
        os << std::left << std::setw(6) << r.rank << std::setw(12) << (r.deviceType + " " + std::to_string(r.device))
           << std::right << std::setw(14) << formatBytes(r.reservedBytes) << std::setw(16)
           << formatBytes(r.peakAllocatedBytes) << std::setw(6) << r.ooms << "  " << r.file << "\n";
    if (m_rows.size() > 1) {
        const Spread a = spreadOf(m_rows, [](const Row& r) { return r.peakAllocatedBytes; });
        const Spread v = spreadOf(m_rows, [](const Row& r) { return r.reservedBytes; });
        os << "\nspread of peak allocated: " << formatBytes(a.max - a.min) << " (rank " << a.maxRank << " "
           << formatBytes(a.max) << " vs rank " << a.minRank << " " << formatBytes(a.min) << ")\n";
        os << "spread of reserved:       " << formatBytes(v.max - v.min) << " (rank " << v.maxRank << " "
           << formatBytes(v.max) << " vs rank " << v.minRank << " " << formatBytes(v.min) << ")\n";
    }
    size_t ooms = 0;
    for (const Row& r : m_rows)
        ooms += r.ooms;
    if (ooms)
        os << "OUT OF MEMORY events: " << ooms << "\n";
    return os.str();
}

} // namespace headroom
