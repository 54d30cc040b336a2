// SPDX-License-Identifier: MIT
#include "ui/whatif/ladderjob.h"

#include "ui/explorer/backgroundjob.h"

namespace headroom {

LadderJob::LadderJob(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{
}

void LadderJob::request(std::shared_ptr<const WhatIfSession> session, LadderRequest request)
{
    m_job->start(
        [session, request](BackgroundJob::Control&) {
            try {
                return std::make_shared<const Ladder>(session->ladder(request));
            } catch (const std::exception&) {
                return std::shared_ptr<const Ladder>(); // what the panel's projection already reports
            }
        },
        [this, start = *request.start](std::shared_ptr<const Ladder> ladder) {
            if (ladder)
                emit ready(*ladder, start);
        });
}

void LadderJob::cancel() { m_job->cancel(); }

void LadderJob::finishNow() { m_job->finishNow(); }

bool LadderJob::isRunning() const { return m_job->isRunning(); }

} // namespace headroom
