// SPDX-License-Identifier: MIT
#include "ui/whatif/ladderjob.h"

#include "ui/explorer/backgroundjob.h"

namespace headroom {

LadderJob::LadderJob(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{
}

void LadderJob::request(const WhatIfBaseline& base, const LeverConfig& start, const WhatIfConstants& k,
                        const DeviceSpec& device, LadderOptions options, const std::optional<Calibration>& calibration)
{
    auto cal = calibration ? std::make_shared<const Calibration>(*calibration) : nullptr;
    options.calibration = nullptr;
    m_job->start(
        [base, start, k, device, options, cal](BackgroundJob::Control&) {
            LadderOptions o = options;
            o.calibration = cal.get();
            try {
                return std::make_shared<const Ladder>(buildLadder(base, start, k, device, o));
            } catch (const std::exception&) {
                return std::shared_ptr<const Ladder>(); // what the panel's projection already reports
            }
        },
        [this, start](std::shared_ptr<const Ladder> ladder) {
            if (ladder)
                emit ready(*ladder, start);
        });
}

void LadderJob::cancel() { m_job->cancel(); }

void LadderJob::finishNow() { m_job->finishNow(); }

bool LadderJob::isRunning() const { return m_job->isRunning(); }

} // namespace headroom
