// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/query/whatifsession.h"

#include <QObject>
#include <QString>

#include <vector>

namespace headroom {

class BackgroundJob;

/// The what-if panel's "Add a Calibration Run": more snapshots of the same job at another
/// micro-batch or sequence, read in the background, each calibrated on its own so that the
/// panel can refit its baseline with them (core/whatif/calibration/whatifmultifit.h). A run's micro-batch and
/// sequence come from its file (the recording helper's headroom_config); one that does not
/// tell them is refused with the reason.
class CalibrationRuns : public QObject {
    Q_OBJECT
public:
    explicit CalibrationRuns(QObject* parent = nullptr);

    /// Reads `path`'s device `deviceIndex` (the one the panel projects) in the background; a
    /// file without that device is refused with `failed`. `stated` gives what the panel's run
    /// was stated at (precision, devices), which the added run shares.
    void add(const QString& path, const StatedConfig& stated, const WhatIfConstants& k, size_t deviceIndex = 0);
    void clear();
    const std::vector<CalibrationRun>& runs() const { return m_runs; }
    const QStringList& names() const { return m_names; }
    bool isLoading() const;

signals:
    /// A run was added or the runs were cleared.
    void changed();
    /// A run could not be added: the file and why.
    void failed(const QString& message);

private:
    std::vector<CalibrationRun> m_runs;
    QStringList m_names;
    BackgroundJob* m_job;
};

} // namespace headroom
