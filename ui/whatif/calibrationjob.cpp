// SPDX-License-Identifier: MIT
#include "ui/whatif/calibrationjob.h"

#include "core/whatif/whatifmultifit.h"
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
        out.calibration = calibrate(*in.trace, in.deviceIndex, *out.analysis, in.stated, in.dims, in.constants);
        if (!in.runs.empty()) {
            std::vector<Calibration> runs{*out.calibration};
            runs.insert(runs.end(), in.runs.begin(), in.runs.end());
            const MultiFit fit = fitCalibrationRuns(runs, in.constants);
            out.calibration->baseline = fit.baseline;
            out.runsText = fit.microBatchFit || fit.sequenceFit
                               ? QCoreApplication::translate(
                                     "headroom", "Fitted on %1 runs (this one and %2): largest residual %3%")
                                     .arg(fit.runs)
                                     .arg(in.runNames.join(QStringLiteral(", ")))
                                     .arg(fit.residual * 100, 0, 'f', 1)
                               : QCoreApplication::translate(
                                     "headroom",
                                     "The added runs differ in neither micro-batch alone nor sequence alone: not used");
        }
    } catch (const std::exception& e) {
        out.calibration.reset();
        out.error = QString::fromUtf8(e.what());
    }
    return out;
}

} // namespace headroom
