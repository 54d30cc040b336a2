// SPDX-License-Identifier: MIT
#include "ui/explorer/analysiscontroller.h"

#include "ui/explorer/backgroundjob.h"
#include "ui/explorer/logging.h"

#include "core/util/loaderror.h"

#include <QElapsedTimer>

namespace headroom {

AnalysisController::AnalysisController(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{
    qRegisterMetaType<ExplorerDataPtr>();
}

bool AnalysisController::isRunning() const
{
    return m_job->isRunning();
}

void AnalysisController::analyze(std::shared_ptr<const LoadedTrace> trace, int deviceIndex)
{
    if (!trace || deviceIndex < 0 || deviceIndex >= static_cast<int>(trace->snapshot.devices.size())) {
        m_job->cancel();
        return;
    }
    m_job->start(
        [trace = std::move(trace), deviceIndex, capacity = m_defaultCapacity](BackgroundJob::Control& control) {
            // A superseded analysis stops at its next stage instead of finishing for nobody.
            try {
                QElapsedTimer t;
                t.start();
                auto data = ExplorerData::compute(trace, static_cast<size_t>(deviceIndex), capacity, control.cancelFlag());
                qCInfo(lcTiming, "analysis: %.1f ms (done at %.1f ms)", double(t.nsecsElapsed()) / 1e6, msSinceStart());
                return data;
            } catch (const LoadCancelled&) {
                return ExplorerDataPtr();
            }
        },
        [this](const ExplorerDataPtr& data) { emit analysisAvailable(data); });
    emit analysisStarted();
}

void AnalysisController::clear()
{
    m_job->cancel();
}

} // namespace headroom
