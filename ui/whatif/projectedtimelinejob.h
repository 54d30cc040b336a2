// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocatorsimconfig.h"
#include "core/io/loader.h"
#include "core/whatif/projection/projectedtimeline.h"

#include <QObject>
#include <QString>

#include <memory>

namespace headroom {

class BackgroundJob;

/// The what-if panel's projected run as a timeline, computed off the GUI thread: each lever
/// move starts one (the latest wins), and `ready` hands the timeline view its curve. A move
/// back to the measured run clears it.
class ProjectedTimelineJob : public QObject {
    Q_OBJECT
public:
    explicit ProjectedTimelineJob(QObject* parent = nullptr);

    /// Projects `p` of `base` (the levers `requested`) over the events of `trace`'s device
    /// `deviceIndex`, its requests under the file's allocator settings. `draw` false (the
    /// levers are the measured run's): only the verdict is wanted, no curve is drawn (a drawn
    /// one is cleared now).
    void request(const WhatIfBaseline& base, const LeverConfig& requested, const Projection& p, const LoadedTrace& trace,
                 int deviceIndex, bool draw = true);
    /// No projected run to draw (the levers are the measured run's, or nothing was calibrated).
    void clear();
    /// Waits for the running request and delivers it now (exports and tests).
    void finishNow();
    bool isRunning() const;
    /// The latest timeline delivered; null when cleared.
    const std::shared_ptr<const ProjectedTimeline>& latest() const { return m_latest; }
    /// When the simulation of the latest projection's requests changed its verdict: the one
    /// sentence that says both (empty otherwise, or while running).
    QString reservedVerdict() const;
    /// The latest projection as the simulation judged it; null while running or cleared.
    const Projection* latestProjection() const { return m_judged && !isRunning() ? &m_latestProjection : nullptr; }

signals:
    void ready(std::shared_ptr<const headroom::ProjectedTimeline> timeline, const QString& label);
    void cleared();
    /// The latest request's simulation arrived (drawn or not): latestProjection() holds it.
    void judged();

private:
    BackgroundJob* m_job;
    std::shared_ptr<const ProjectedTimeline> m_latest;
    Projection m_latestProjection;
    bool m_judged = false;
};

} // namespace headroom
