// SPDX-License-Identifier: MIT
#pragma once

// The what-if panel (issue 6 §3): levers on the left, the projected memory per phase beside
// the measured one with the capacity line and the band, step time, and the ladder whose rungs
// apply on click. Self-contained: the main window docks it and feeds it a trace or a model.

#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/whatif/ladder/allocatorverdict.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/ladder/whatifladder.h"
#include "core/whatif/query/whatifsettings.h"

#include "ui/whatif/calibrationjob.h"

#include <QWidget>

#include <memory>
#include <optional>

class QLabel;

namespace headroom {

class AllocatorSection;
class ProjectedTimelineJob;
class LadderJob;
class CalibrationRuns;
class LadderSection;
class WhatIfChart;
class WhatIfLeverForm;
class WhatIfVerifyDialog;

class WhatIfPanel : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfPanel(QWidget* parent = nullptr);
    ~WhatIfPanel() override;

    /// Calibrated mode: decomposes a steady iteration of the device, in the background
    /// (calibrated() follows). Pass the analysis when it exists (the explorer's); without it
    /// the background job analyses the device first.
    void setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex,
                  std::shared_ptr<const DeviceAnalysis> analysis = nullptr);
    /// The same, with the session the explorer's report made on the file alone: used at once
    /// when the panel has nothing to add (no measured values given, no added runs, the default
    /// constants), instead of calibrating a second time.
    void setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex,
                  std::shared_ptr<const DeviceAnalysis> analysis, std::shared_ptr<const WhatIfSession> fileSession);
    /// Analytic mode: a preset or hand-entered dimensions trained at `config`.
    void setAnalyticModel(const ModelDims& dims, const LeverConfig& config);
    void setCapacity(int64_t bytes);
    /// What the diagnosis's allocator replay concluded for the device (computed with the
    /// analysis off the GUI thread): the ladder's allocator rung, for the levers as recorded.
    void setAllocatorVerdict(std::optional<AllocatorVerdict> verdict);
    AllocatorSection* allocatorSection() const { return m_allocator; }
    /// The measured values the trace cannot tell (the panel asks for them as well).
    void setStated(const StatedConfig& stated);

    LeverConfig config() const { return m_config; }
    /// The model's constants (the Constants… dialog edits them); recalibrates and recomputes.
    const WhatIfConstants& constants() const { return m_k; }
    void setConstants(const WhatIfConstants& k);
    /// The ladder spends this currency first, then the default order (docs/whatif-model.md, "The terms").
    void setSpendFirst(std::optional<Currency> currency);
    std::optional<Currency> spendFirst() const { return m_spendFirst; }
    /// Opens the constants dialog (modal); true when the user applied changes.
    bool editConstants();
    void setConfig(const LeverConfig& config);
    const Projection& projection() const { return m_projection; }
    /// The device the projection is judged against (capacity and speeds).
    const DeviceSpec& device() const { return m_device; }
    /// The latest ladder delivered (built off the GUI thread, its rungs simulated): empty
    /// while one is being built.
    const Ladder& ladder() const { return m_ladder; }
    /// Waits for the ladder being built and shows it now (exports and tests).
    void finishLadderNow();
    /// The levers the ladder started from, and the measured run's (the calibration's).
    const LeverConfig& ladderStart() const { return m_ladderStart; }
    const LeverConfig& measuredConfig() const { return m_base.config; }
    /// > 0: the micro-batch levers are ratios of the measured run (core/whatif/calibration/batchratio.h).
    int microBatchUnits() const { return m_base.microBatchUnits; }
    /// What the user set (levers, measured values, capacity, constants).
    WhatIfSettings settings() const;
    /// What the user set, as JSON for the trace's user data (native format) and the postmortem.
    QString settingsJson() const;
    bool restoreSettings(const QString& json);
    /// The postmortem's what-if section: the configuration, the projection against the
    /// capacity, the step time and the ladder up to its first fitting rung.
    QString markdown() const;
    double lastRecomputeMicroseconds() const { return m_lastRecomputeUs; }
    /// "Add a Calibration Run": another snapshot of the same job at another micro-batch or
    /// sequence refits the batch terms (read in the background; calibrationRunsChanged follows).
    void addCalibrationRun(const QString& path);
    CalibrationRuns* calibrationRuns() const { return m_runs; }
    /// The projected run as a timeline (off the GUI thread), for the timeline view to draw.
    ProjectedTimelineJob* projectedTimeline() const { return m_timelineJob; }
    /// "Compare with a measured run": the projection against the run at `path` that followed
    /// (opens a dialog, which reads the run in the background). Null without a calibration.
    WhatIfVerifyDialog* compareWithRun(const QString& path);
    /// The error of the last calibration (e.g. a missing measured value), empty when fine.
    QString calibrationError() const { return m_error; }
    /// A calibration runs in the background (after setTrace, setStated, setConstants, an added
    /// run); calibrated() follows.
    bool isCalibrating() const;
    /// Waits for the running calibration and applies it now (an export, a test).
    void finishCalibration();

signals:
    void configChanged();
    /// The ladder was rebuilt (a calibration, the capacity, the spend-first currency, "Fit").
    void ladderChanged();
    /// A calibration came back and the panel shows it (or its error).
    void calibrated();
    /// The user applied ladder rung `index` (its configuration is now config()).
    void rungApplied(int index);
    void settingsChanged(const QString& json);
    /// The Allocator section replayed a setting other than the recorded one: its reserved curve.
    void allocatorCurveReady(std::shared_ptr<const std::vector<int64_t>> curve, const QString& label);
    void allocatorCurveCleared();
    /// The user chose a capacity (bytes, 0: unknown), here or in saved settings restored: it is
    /// the open file's, and the other views follow it.
    void capacityChosen(qint64 bytes);

private:
    void buildUi();
    /// The trace's state without a calibration (setTrace's first half).
    void adoptTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex, std::shared_ptr<const DeviceAnalysis> analysis);
    void recalibrate();
    void applyCalibration(const CalibrationJob::Outcome& outcome);
    void recompute();
    void rebuildLadder();
    /// The projected run's simulation arrived: its verdict replaces the allocated peak's.
    void adoptSimulatedVerdict();
    void showLadder(const Ladder& ladder, const LeverConfig& start);
    void readControls();
    void lockUnknown(LeverConfig& config) const;
    /// Keeps `c` to lay over the calibration on its way (only the levers moved from the last one);
    /// `units`: what its micro-batch counts per measured run (0: a count; batchratio.h).
    void setPending(const LeverConfig& c, int units);
    /// setConfig() for a configuration whose micro-batch counts `units` per measured run.
    void setConfigIn(const LeverConfig& config, int units);
    void writeControls();
    void applyRung(int index);
    void showSummary();

    std::shared_ptr<const LoadedTrace> m_trace;
    std::shared_ptr<const DeviceAnalysis> m_analysis;
    int m_deviceIndex = 0;
    std::optional<ModelDims> m_dims;
    StatedConfig m_stated;
    /// The file's what-if (or the analytic model's): every figure the panel shows is its answer.
    std::shared_ptr<const WhatIfSession> m_session;
    /// The session's calibration, an unknown micro-batch in ratios; null in analytic mode.
    const Calibration* cal() const
    {
        return m_session && m_session->ratioCalibration() ? &*m_session->ratioCalibration() : nullptr;
    }
    CalibrationJob* m_calJob;
    ProjectedTimelineJob* m_timelineJob;
    LadderJob* m_ladderJob;
    std::optional<LeverConfig> m_pendingConfig; ///< set while calibrating: applied over it
    LeverConfig m_pendingFrom; ///< the calibration m_pendingConfig's moves were made from
    int m_pendingUnits = 0, m_pendingFromUnits = 0; ///< their micro-batch units (batchratio.h)
    WhatIfBaseline m_base;
    bool m_haveBase = false;
    WhatIfConstants m_k;
    std::optional<Currency> m_spendFirst;
    DeviceSpec m_device;
    LeverConfig m_config;
    Projection m_projection;
    Projection m_measured;
    Ladder m_ladder;
    LeverConfig m_ladderStart;
    QString m_error;
    double m_lastRecomputeUs = 0;
    bool m_updating = false;

    WhatIfLeverForm* m_levers = nullptr;
    AllocatorSection* m_allocator = nullptr;
    std::optional<AllocatorVerdict> m_verdict;
    QString m_summaryText; ///< the projection's part of the summary; the allocator's line follows
    QLabel* m_summary = nullptr;
    QLabel* m_notes = nullptr;
    WhatIfChart* m_chart = nullptr;
    LadderSection* m_ladderSection = nullptr;
    CalibrationRuns* m_runs = nullptr;
    QString m_runsText; ///< what the added runs' fit says (or why a run was refused)
};

} // namespace headroom
