// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/query/whatifsession.h"

#include <QObject>

#include <memory>
#include <optional>

namespace headroom {

class BackgroundJob;

/// The what-if panel's ladder, built off the GUI thread by the file's session (the ladder
/// `headroom-cli ladder` and the diagnosis get): every replayed rung's requests run through the
/// caching-allocator model, which takes about a second a rung on a 10M-event trace. Latest wins.
class LadderJob : public QObject {
    Q_OBJECT
public:
    explicit LadderJob(QObject* parent = nullptr);

    /// The session's ladder for `request` (whose start is set).
    void request(std::shared_ptr<const WhatIfSession> session, LadderRequest request);
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
