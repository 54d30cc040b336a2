// SPDX-License-Identifier: MIT
#pragma once

// One run of a job as the standing budget remembers it (docs/budget.md): its configuration,
// its peaks, its worst step and whether it ran out of memory. A snapshot gives one per device;
// the GPU recorder's run metric gives one without a snapshot.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// The configuration a run was: field -> value as text ("micro_batch" -> "4").
using BudgetConfig = std::map<std::string, std::string>;

struct BudgetRun {
    /// Unique per run: the file's SHA-256 and the device for a snapshot (recording the file
    /// again adds nothing), the recorder's own id for a run metric.
    std::string runId;
    std::string fileHash; ///< "" for a run metric
    std::string file;     ///< as given to `budget record`, for the reader
    int device = 0;
    std::string source = "snapshot"; ///< "snapshot" or "metric"
    BudgetConfig config;
    int64_t peakAllocated = 0;
    std::optional<int64_t> peakReserved;
    std::optional<int64_t> capacity;
    bool oom = false;
    std::optional<int> oomIteration;
    /// The iteration with the highest peak and each iteration's peak, where the file tells them.
    std::optional<int> worstIteration;
    std::vector<int64_t> iterationPeaks;
    std::map<std::string, int64_t> categoriesAtPeak; ///< category key -> bytes alive at the peak
    /// The what-if's projection of the run as recorded, at its capacity (check --fit's figures:
    /// the CUDA context and the allocator's fragmentation counted), where it could make one: a
    /// snapshot with a step to calibrate on. The policy judges the margin by it.
    struct Projected {
        int64_t peak = 0, peakHigh = 0; ///< the headline and the band's high end
        double marginLeft = 0;          ///< FitJudgement::marginLeft: passes any margin up to this
        /// FitJudgement::judgedContext; none in rows recorded before it was kept.
        std::optional<int64_t> context;
    };
    std::optional<Projected> projected;
    /// The largest step the run processed (tokens or samples, as the recorder counted them) and
    /// the largest its data can produce (declared for the configuration).
    std::optional<int64_t> maxStepTokens;
    std::optional<int64_t> worstCaseTokens;
    std::string recordedAt; ///< ISO 8601, UTC, milliseconds ("2026-12-06T01:30:00.250Z"); sorts as text
    std::string toolVersion;

    /// What the run needs of the device: the projection's headline where there is one, else
    /// the peak allocated (a run metric, or a file the what-if cannot calibrate on).
    int64_t devicePeak() const { return projected ? projected->peak : peakAllocated; }
};

/// Now as BudgetRun::recordedAt spells it.
std::string budgetTimestampNow();

} // namespace headroom
