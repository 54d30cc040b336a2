// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/measuredsettler.h"

#include <algorithm>

namespace headroom {

MeasuredSettler::MeasuredSettler(std::vector<MeasuredItem>& out, std::vector<MeasuredItem> readHow)
    : m_out(out)
    , m_readHow(std::move(readHow))
{
}

template <typename V, typename Format>
std::optional<V> MeasuredSettler::settle(const char* key, std::optional<V> stated, std::optional<V> read, Format format)
{
    std::optional<V> out;
    MeasuredItem m{key, "", "unknown", ""};
    if (stated) {
        out = stated;
        m = {key, format(*stated), "stated", "command line / panel"};
        if (read && *read != *stated)
            m.detail += "; the trace says " + format(*read);
    } else {
        // Read: where from; unknown: why, where a reading was looked at and could not tell.
        if (read) {
            out = read;
            m = {key, format(*read), "read", ""};
        }
        for (const auto& h : m_readHow)
            if (h.key == key)
                m.detail = h.detail;
    }
    m_out.push_back(m);
    return out;
}

void MeasuredSettler::addOptimizerDetail(const std::string& detail)
{
    auto it = std::find_if(m_readHow.begin(), m_readHow.end(), [](const MeasuredItem& m) { return m.key == "optimizer"; });
    if (it != m_readHow.end())
        it->detail += "; " + detail;
    else
        m_readHow.push_back({"optimizer", "", "read", detail});
}

std::optional<int> MeasuredSettler::count(const char* key, std::optional<int> stated, std::optional<int> read)
{
    return settle(key, stated, read, [](int v) { return std::to_string(v); });
}

std::optional<Precision> MeasuredSettler::precision(std::optional<Precision> stated, std::optional<Precision> read,
                                                    const std::string& unknownDetail)
{
    const auto p = settle("precision", stated, read, [](Precision v) { return std::string(precisionName(v)); });
    if (!p)
        m_out.back().detail = unknownDetail;
    return p;
}

std::optional<OptimizerKind> MeasuredSettler::optimizer(std::optional<OptimizerKind> stated, std::optional<OptimizerKind> read)
{
    return settle("optimizer", stated, read, [](OptimizerKind v) { return std::string(optimizerName(v)); });
}

} // namespace headroom
