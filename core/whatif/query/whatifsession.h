// SPDX-License-Identifier: MIT
#pragma once

// One file's what-if, asked once (issue 45): a frontend (the CLI's whatif and ladder, MCP, the
// panel, the diagnosis, the verify dialog) builds a WhatIfQuery and renders what the session
// answers. None of them calibrates, fits other runs, projects, simulates or builds a ladder
// itself, so the same file, levers and capacity get the same numbers in every view.

#include "core/analysis/memoryanalysis.h"
#include "core/replay/allocatorsimconfig.h"
#include "core/replay/loadedtrace.h"
#include "core/whatif/ladder/allocatorverdict.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/ladder/whatifladder.h"
#include "core/whatif/calibration/whatifmultifit.h"
#include "core/whatif/query/whatifverify.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// One recorded run to calibrate on; the session reads it while it is built and keeps nothing of it
/// but what the calibration keeps.
struct CalibrationRun {
    std::shared_ptr<const LoadedTrace> trace; ///< may be null for one of WhatIfQuery::others that is `calibrated`
    StatedConfig stated;
    /// This run's calibration already made with these stated values (MCP's cache); null: made here.
    std::shared_ptr<const Calibration> calibrated;
};

struct WhatIfQuery {
    /// The run measured. Without a trace the session is analytic: `dims` and `start` only.
    CalibrationRun measured;
    size_t device = 0; ///< position in the trace's devices
    std::shared_ptr<const DeviceAnalysis> analysis; ///< the device's analysis if the caller has it
    ModelDims dims;
    WhatIfConstants constants;
    /// Other runs of the same setup at other micro-batches or sequences: the terms are refitted
    /// with their measured starts of backward (whatifmultifit.h).
    std::vector<CalibrationRun> others;
    LeverConfig start; ///< analytic mode only: the configuration the model is stated at
};

/// The device a what-if is judged on: `preset`'s speeds (empty: the class of the capacity);
/// `capacity` 0 is unknown (no verdict).
DeviceSpec whatIfDevice(int64_t capacity, const std::optional<DeviceSpec>& preset = std::nullopt);

/// How the micro-batch lever counts where the trace does not tell it: not at all (the CLI's
/// whatif refuses a move), or in ratios of the measured run (the panel's slider, the ladder).
enum class BatchUnits : uint8_t { Measured, Ratios };

/// The simulation of the projected run's requests: now, or later (the panel runs it off the
/// slider's path and adopts its verdict when it arrives; projectedtimeline.h).
enum class Simulation : uint8_t { Now, Later };

struct LadderRequest {
    DeviceSpec device;
    std::optional<LeverConfig> start; ///< none: the measured configuration
    /// How `start`'s micro-batch counts: Measured (the CLI's levers: a micro-batch the trace
    /// does not tell is taken as the measured run's, since a moved one was refused) or Ratios.
    BatchUnits startUnits = BatchUnits::Ratios;
    std::vector<Currency> currencyOrder;
    int availableDevices = 1;
    /// The replay of the recorded requests at the device's capacity (AllocatorVerdict::forOom),
    /// where the caller ran it; none: the ladder has no allocator rung.
    std::optional<AllocatorVerdict> allocator;
};

class WhatIfSession {
public:
    /// Calibrates (throws what calibrate() throws: WhatIfMissingValue, std::runtime_error).
    explicit WhatIfSession(const WhatIfQuery& query);

    bool analytic() const { return !m_cal; }
    /// The calibration with the other runs' fit; nullopt in analytic mode.
    const std::optional<Calibration>& calibration() const { return m_cal; }
    /// The same, an unknown micro-batch counted in ratios of the measured run (batchratio.h).
    const std::optional<Calibration>& ratioCalibration() const { return m_ratioCal; }
    const WhatIfBaseline& baseline(BatchUnits units = BatchUnits::Measured) const;
    /// The other runs' fit; nullopt when there were none.
    const std::optional<MultiFit>& fit() const { return m_fit; }
    const WhatIfConstants& constants() const { return m_k; }

    /// The answer for `target` on `device`, as every frontend shows it: projected, its requests
    /// simulated under the file's allocator settings, the whole step where an OOM cut the
    /// calibrated one short, the peak described. Throws WhatIfMissingValue where `target` moves
    /// a lever whose measured value the trace does not tell (in `units`).
    Projection project(const LeverConfig& target, const DeviceSpec& device, BatchUnits units = BatchUnits::Measured,
                       Simulation simulation = Simulation::Now) const;
    /// The ladder from the request's start, with the file's inputs (outlier batch or device,
    /// suspect optimizer state, allocator settings, cut step). Counts in ratios.
    Ladder ladder(const LadderRequest& request) const;
    /// The projection to AFTER's configuration against AFTER's measured peak: `target`'s levers
    /// that `moved` leaves alone are read from AFTER (configOfAfter).
    Verification verify(const LoadedTrace& after, size_t afterDevice, const LeverConfig& target,
                        const LeverMask& moved, const DeviceSpec& device,
                        BatchUnits units = BatchUnits::Measured) const;

private:
    LadderOptions ladderOptions(const LadderRequest& request) const;
    /// The baseline `device` is judged with: on the OOM record's own capacity (the allocator's
    /// reserved + the device's free memory), one that counts nothing outside the allocator,
    /// which that capacity already leaves out; else baseline(units).
    const WhatIfBaseline& baselineOn(const DeviceSpec& device, BatchUnits units) const;

    WhatIfConstants m_k;
    std::optional<Calibration> m_cal;
    std::optional<Calibration> m_ratioCal;
    std::optional<MultiFit> m_fit;
    WhatIfBaseline m_analytic;
    AllocatorConfig m_recordedAllocator;
    int64_t m_oomCapacity = 0; ///< the OOM record's capacity of the measured device; 0: none
    /// baseline(Measured) and baseline(Ratios) with no memory outside the allocator.
    std::optional<WhatIfBaseline> m_oomBase, m_oomRatioBase;
};

} // namespace headroom
