// SPDX-License-Identifier: MIT
#include "ui/loadcontroller.h"

#include "core/loaderror.h"
#include "ui/memorytuning.h"
#include "ui/timelinecurves.h"

#include <QFuture>
#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <atomic>

namespace headroom {

/// State shared between the controller and one worker; outlives whichever ends last.
struct LoadController::Job {
    std::atomic<bool> cancel{false};
    std::atomic<int> permille{0};
};

struct LoadController::Result {
    std::shared_ptr<const LoadedTrace> trace;
    std::vector<std::shared_ptr<const TimelineCurves>> curves;
    QString error;
    bool cancelled = false;
};

namespace {
constexpr int kProgressIntervalMs = 50;
}

LoadController::LoadController(QObject* parent)
    : QObject(parent)
    , m_progressTimer(new QTimer(this))
{
    qRegisterMetaType<std::shared_ptr<const LoadedTrace>>();
    m_progressTimer->setInterval(kProgressIntervalMs);
    connect(m_progressTimer, &QTimer::timeout, this, &LoadController::pollProgress);
}

LoadController::~LoadController()
{
    // The worker holds its own reference to the job; it sees the flag, stops and its
    // continuation is dropped with this object (the context of .then()).
    if (m_job)
        m_job->cancel.store(true);
}

void LoadController::load(const QString& path)
{
    if (m_job)
        m_job->cancel.store(true); // latest wins: the old result is ignored anyway
    auto job = std::make_shared<Job>();
    m_job = job;
    const quint64 generation = ++m_generation;
    m_loadingPath = path;

    const std::string file = path.toStdString();
    QFuture<Result> future = QtConcurrent::run([job, file]() -> Result {
        Result r;
        LoadOptions options;
        options.cancel = &job->cancel;
        options.progress = [job](uint64_t done, uint64_t total) {
            if (total > 0)
                job->permille.store(static_cast<int>(std::min<uint64_t>(1000, done * 1000 / total)),
                                    std::memory_order_relaxed);
        };
        try {
            r.trace = Loader::load(file, options);
            r.curves = TimelineCurves::computeAll(*r.trace);
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
    });
    // A watcher connected before it is given the future reports a job that has already
    // finished too (the documented race-free order); it is deleted with this controller.
    auto* watcher = new QFutureWatcher<Result>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
        finish(generation, watcher->result());
        watcher->deleteLater();
    });
    watcher->setFuture(future);
    // The worker is already reading while the window shows that it is (the result comes
    // back queued, after these).
    m_lastPermille = -1;
    emit loadStarted(path);
    emit progressChanged(0);
    m_lastPermille = 0;
    m_progressTimer->start();
}

void LoadController::cancel()
{
    if (!m_job)
        return;
    m_job->cancel.store(true);
    m_job.reset();
    ++m_generation; // whatever the worker still returns is stale now
    m_progressTimer->stop();
    const QString path = m_loadingPath;
    m_loadingPath.clear();
    emit loadCancelled(path);
}

void LoadController::pollProgress()
{
    if (!m_job)
        return;
    const int permille = m_job->permille.load(std::memory_order_relaxed);
    if (permille != m_lastPermille) { // steps of 0.1% at most every kProgressIntervalMs
        m_lastPermille = permille;
        emit progressChanged(permille);
    }
}

void LoadController::finish(quint64 generation, const Result& result)
{
    if (generation != m_generation)
        return;
    m_job.reset();
    m_progressTimer->stop();
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
