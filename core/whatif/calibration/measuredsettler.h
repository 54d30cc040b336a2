// SPDX-License-Identifier: MIT
#pragma once
// The calibration's third stage (docs/whatif-model.md, "What the trace tells"): each value the
// run was measured at, settled from what the user stated and what the trace tells.

#include "core/whatif/calibration/traceconfig.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Settles measured values one by one: a stated value wins over a read one (and says when the
/// trace disagrees), a read one says where it was read; neither leaves it unknown. Each settled
/// value leaves its MeasuredItem, in the order settled, in the list it was given.
class MeasuredSettler {
public:
    /// `readHow`: where each value the trace tells was read (readTraceConfig's list).
    MeasuredSettler(std::vector<MeasuredItem>& out, std::vector<MeasuredItem> readHow);

    /// A value read from something other than the trace's annotations (sizes, passes).
    void addReading(MeasuredItem how) { m_readHow.push_back(std::move(how)); }
    /// Adds `detail` to where the optimizer was read, or reads it there.
    void addOptimizerDetail(const std::string& detail);

    std::optional<int> count(const char* key, std::optional<int> stated, std::optional<int> read);
    /// `unknownDetail`: why the precision is open when neither tells it.
    std::optional<Precision> precision(std::optional<Precision> stated, std::optional<Precision> read,
                                       const std::string& unknownDetail);
    std::optional<OptimizerKind> optimizer(std::optional<OptimizerKind> stated, std::optional<OptimizerKind> read);

private:
    template <typename V, typename Format>
    std::optional<V> settle(const char* key, std::optional<V> stated, std::optional<V> read, Format format);

    std::vector<MeasuredItem>& m_out;
    std::vector<MeasuredItem> m_readHow;
};

} // namespace headroom
