// SPDX-License-Identifier: MIT
#include "ui/whatif/projectedtimelinejob.h"

#include "core/whatif/query/whatifjson.h"
#include "ui/explorer/backgroundjob.h"

#include <QStringList>

namespace headroom {

ProjectedTimelineJob::ProjectedTimelineJob(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{
}

void ProjectedTimelineJob::request(const WhatIfBaseline& base, const LeverConfig& requested, const Projection& p,
                                   const LoadedTrace& trace, int deviceIndex, bool draw)
{
    if (deviceIndex < 0 || size_t(deviceIndex) >= trace.timelines.size()) {
        clear();
        return;
    }
    m_judged = false;
    if (!draw && m_latest) {
        m_latest.reset();
        emit cleared();
    }
    const size_t events = trace.timelines[size_t(deviceIndex)].allocated.size();
    const AllocatorConfig recorded = AllocatorConfig::fromSnapshot(trace.snapshot.allocatorSettings);
    QStringList changes;
    for (const std::string& c : requested.differences(base.config, base.microBatchUnits))
        changes << QString::fromStdString(c);
    const QString label = tr("projected (%1)").arg(changes.join(QStringLiteral(", ")));
    m_job->start(
        [base, p, events, recorded](BackgroundJob::Control&) {
            return std::make_shared<const ProjectedTimeline>(projectTimeline(base, p, events, recorded));
        },
        [this, label, p, draw](std::shared_ptr<const ProjectedTimeline> t) {
            m_latestProjection = p;
            adoptSimulation(m_latestProjection, *t);
            m_judged = true;
            if (draw) {
                m_latest = t;
                emit ready(std::move(t), label);
            }
            emit judged();
        });
}

QString ProjectedTimelineJob::reservedVerdict() const
{
    if (!m_judged || isRunning())
        return {};
    return QString::fromStdString(reservedVerdictText(m_latestProjection)).trimmed();
}

void ProjectedTimelineJob::clear()
{
    m_job->cancel();
    m_judged = false;
    const bool had = m_latest != nullptr;
    m_latest.reset();
    if (had)
        emit cleared();
}

void ProjectedTimelineJob::finishNow() { m_job->finishNow(); }

bool ProjectedTimelineJob::isRunning() const { return m_job->isRunning(); }

} // namespace headroom
