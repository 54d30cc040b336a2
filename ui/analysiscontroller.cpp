// SPDX-License-Identifier: MIT
#include "ui/analysiscontroller.h"

#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace headroom {

AnalysisController::AnalysisController(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<ExplorerDataPtr>();
}

void AnalysisController::analyze(std::shared_ptr<const LoadedTrace> trace, int deviceIndex)
{
    const quint64 generation = ++m_generation;
    if (!trace || deviceIndex < 0 || deviceIndex >= static_cast<int>(trace->snapshot.devices.size())) {
        m_running = false;
        return;
    }
    m_running = true;
    emit analysisStarted();
    QPointer<AnalysisController> self(this);
    QtConcurrent::run([trace = std::move(trace), deviceIndex, capacity = m_defaultCapacity] {
        return ExplorerData::compute(trace, static_cast<size_t>(deviceIndex), capacity);
    }).then(this, [self, generation](ExplorerDataPtr data) {
        if (!self || generation != self->m_generation)
            return; // stale: a newer request (or clear) came in meanwhile
        self->m_running = false;
        emit self->analysisAvailable(data);
    });
}

void AnalysisController::clear()
{
    ++m_generation;
    m_running = false;
}

} // namespace headroom
