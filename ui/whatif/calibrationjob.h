// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/memoryanalysis.h"
#include "core/whatif/query/whatifsession.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>
#include <vector>

namespace headroom {

class BackgroundJob;

/// The what-if panel's calibration, off the GUI thread: on a 1M-event trace the analysis (when
/// the panel has none) and the calibration take seconds the window would otherwise freeze for.
/// The latest request wins; finished() comes back on the GUI thread.
class CalibrationJob : public QObject {
    Q_OBJECT
public:
    struct Input {
        std::shared_ptr<const LoadedTrace> trace;
        size_t deviceIndex = 0;
        std::shared_ptr<const DeviceAnalysis> analysis; ///< null: analysed in the worker
        StatedConfig stated;
        ModelDims dims;
        WhatIfConstants constants;
        std::vector<CalibrationRun> runs; ///< added calibration runs: refit with them
        QStringList runNames;
    };
    struct Outcome {
        std::shared_ptr<const DeviceAnalysis> analysis;
        std::shared_ptr<const WhatIfSession> session; ///< null: `error` says why
        QString error;
        QString runsText; ///< what the added runs' fit says
    };

    explicit CalibrationJob(QObject* parent = nullptr);

    void start(Input input);
    void cancel();
    bool isRunning() const;
    /// Waits for the running calibration and delivers finished() now (an export, a test).
    void finishNow();

signals:
    void finished(const headroom::CalibrationJob::Outcome& outcome);

private:
    static Outcome run(const Input& input);
    BackgroundJob* m_job;
};

} // namespace headroom
