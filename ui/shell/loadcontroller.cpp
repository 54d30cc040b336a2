// SPDX-License-Identifier: MIT
#include "ui/shell/loadcontroller.h"

#include "core/util/loaderror.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/explorer/logging.h"
#include "ui/shell/memorytuning.h"
#include "ui/timeline/timelinecurves.h"

#include <QElapsedTimer>

namespace headroom {

struct LoadController::Result {
    std::shared_ptr<const LoadedTrace> trace;
    std::vector<std::shared_ptr<const TimelineCurves>> curves;
    QString error;
    bool cancelled = false;
};

LoadController::LoadController(QObject* parent)
    : QObject(parent)
    , m_job(new BackgroundJob(this))
{
    qRegisterMetaType<std::shared_ptr<const LoadedTrace>>();
    connect(m_job, &BackgroundJob::progressChanged, this, &LoadController::progressChanged);
}

// The job cancels the worker without waiting for it.
LoadController::~LoadController() = default;

bool LoadController::isLoading() const
{
    return m_job->isRunning();
}

void LoadController::load(const QString& path)
{
    m_loadingPath = path;
    const std::string file = path.toStdString();
    m_job->start(
        [file](BackgroundJob::Control& control) -> Result {
            Result r;
            LoadOptions options;
            options.cancel = control.cancelFlag();
            options.progress = [&control](uint64_t done, uint64_t total) { control.setProgress(done, total); };
            try {
                QElapsedTimer t;
                t.start();
                r.trace = Loader::load(file, options);
                const double loaded = double(t.nsecsElapsed()) / 1e6;
                r.curves = TimelineCurves::computeAll(*r.trace);
                qCInfo(lcTiming, "load: %.1f ms, then curves: %.1f ms (done at %.1f ms)", loaded,
                       double(t.nsecsElapsed()) / 1e6 - loaded, msSinceStart());
            } catch (const LoadCancelled&) {
                r.cancelled = true;
            } catch (const std::exception& e) {
                r.error = QString::fromStdString(e.what());
            } catch (...) {
                r.error = QStringLiteral("%1: unexpected error while loading").arg(QString::fromStdString(file));
            }
            if (!r.trace)
                returnFreedMemory(); // a cancelled or failed load gives its memory back at once
            return r;
        },
        [this](const Result& result) { finish(result); });
    // The worker is already reading while the window shows that it is (the result comes
    // back queued, after these).
    emit loadStarted(path);
    emit progressChanged(0);
}

void LoadController::cancel()
{
    if (!m_job->isRunning())
        return;
    m_job->cancel();
    const QString path = m_loadingPath;
    m_loadingPath.clear();
    emit loadCancelled(path);
}

void LoadController::finish(const Result& result)
{
    const QString path = m_loadingPath;
    m_loadingPath.clear();
    if (result.trace) {
        emit progressChanged(1000);
        emit curvesPrepared(result.trace, result.curves);
        emit traceLoaded(path, result.trace);
    } else if (result.cancelled) {
        emit loadCancelled(path);
    } else {
        emit loadFailed(path, result.error);
    }
}

} // namespace headroom
