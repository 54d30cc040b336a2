// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/loadedtrace.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

/// The multi-file summary (`headroom-cli summary rank0.pickle rank1.pickle ...` or a
/// directory): one row per rank and GPU device with reserved, peak allocated and OOMs,
/// and the spread between ranks (the imbalance ZeRO/FSDP runs often show). The rank is
/// the one the file records (Chrome traces' distributedInfo), else the number in a
/// `rank<N>` file name, else the file's position in the sorted list.
class RankTable {
public:
    struct Row {
        int rank = 0;
        int device = 0;
        std::string deviceType;
        std::string file;
        int64_t reservedBytes = 0;     ///< peak of the reserved curve
        int64_t peakAllocatedBytes = 0;
        size_t ooms = 0;
    };

    explicit RankTable(const std::vector<std::shared_ptr<const LoadedTrace>>& traces);

    const std::vector<Row>& rows() const { return m_rows; }
    nlohmann::json toJson() const;
    std::string toText() const;

    /// `rank<N>`/`rank_<N>`/`rank-<N>` in a file name, else -1.
    static int rankFromFileName(const std::string& path);

private:
    std::vector<Row> m_rows;
};

} // namespace headroom
