// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocatorsimconfig.h"
#include "core/whatif/whatifcalibration.h"
#include "core/whatif/whatifladder.h"

#include <QObject>

#include <memory>
#include <optional>

namespace headroom {

class BackgroundJob;

/// The what-if panel's ladder, built off the GUI thread: every replayed rung's requests run
/// through the caching-allocator model (LadderOptions::simulate), as `headroom-cli ladder`
/// judges them, which takes about a second a rung on a 10M-event trace. Latest wins.
class LadderJob : public QObject {
    Q_OBJECT
public:
    explicit LadderJob(QObject* parent = nullptr);

    /// Builds the ladder of `base` from `start`; `options.calibration` is replaced by a copy
    /// of `calibration` the worker owns.
    void request(const WhatIfBaseline& base, const LeverConfig& start, const WhatIfConstants& k, const DeviceSpec& device,
                 LadderOptions options, const std::optional<Calibration>& calibration);
    void cancel();
    /// Waits for the running request and delivers it now (exports and tests).
    void finishNow();
    bool isRunning() const;

signals:
    void ready(const headroom::Ladder& ladder, const headroom::LeverConfig& start);

private:
    BackgroundJob* m_job;
};

} // namespace headroom
