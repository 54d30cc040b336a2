// SPDX-License-Identifier: MIT
#include "ui/whatif/calibrationjob.h"

#include "ui/explorer/backgroundjob.h"

#include <QCoreApplication>

namespace headroom {

CalibrationJob::CalibrationJob(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{}

void CalibrationJob::start(Input input)
{
    m_job->start([input = std::move(input)](BackgroundJob::Control&) { return run(input); },
                 [this](Outcome out) { emit finished(out); });
}

void CalibrationJob::cancel()
{
    m_job->cancel();
}

bool CalibrationJob::isRunning() const
{
    return m_job->isRunning();
}

void CalibrationJob::finishNow()
{
    m_job->finishNow();
}

CalibrationJob::Outcome CalibrationJob::run(const Input& in)
{
    Outcome out;
    try {
        out.analysis = in.analysis ? in.analysis
                                   : std::make_shared<const DeviceAnalysis>(analyzeDevice(*in.trace, in.deviceIndex));
        WhatIfQuery q;
        q.measured = {in.trace, in.stated, nullptr};
        q.device = in.deviceIndex;
        q.analysis = out.analysis;
        q.dims = in.dims;
        q.constants = in.constants;
        q.others = in.runs;
        out.session = std::make_shared<const WhatIfSession>(q);
        if (const std::optional<MultiFit>& fit = out.session->fit())
            out.runsText = fit->microBatchFit || fit->sequenceFit
                               ? QCoreApplication::translate(
                                     "headroom", "Fitted on %1 runs (this one and %2): largest residual %3%")
                                     .arg(fit->runs)
                                     .arg(in.runNames.join(QStringLiteral(", ")))
                                     .arg(fit->residual * 100, 0, 'f', 1)
                               : QCoreApplication::translate(
                                     "headroom",
                                     "The added runs differ in neither micro-batch alone nor sequence alone: not used");
    } catch (const std::exception& e) {
        out.session.reset();
        out.error = QString::fromUtf8(e.what());
    }
    return out;
}

} // namespace headroom
