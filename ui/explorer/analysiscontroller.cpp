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
        [capacity = capacityFor(trace), trace, deviceIndex](BackgroundJob::Control& control) {
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

void AnalysisController::setChosenCapacity(const std::shared_ptr<const LoadedTrace>& trace, int64_t bytes)
{
    m_chosenFor = trace;
    m_chosen = bytes;
}

CapacityChoice AnalysisController::capacityFor(const std::shared_ptr<const LoadedTrace>& trace) const
{
    CapacityChoice c;
    c.assumed = m_defaultCapacity;
    if (trace && m_chosenFor.lock() == trace) {
        if (m_chosen > 0)
            c.chosen = m_chosen;
        else
            c.assumed = 0; // "unknown" chosen: nothing assumed either
    }
    return c;
}

void AnalysisController::clear()
{
    m_job->cancel();
}

} // namespace headroom
