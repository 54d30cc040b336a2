// SPDX-License-Identifier: MIT
#pragma once

#include "core/util/units.h"

#include <QFutureWatcher>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

class QTimer;

namespace headroom {

/// One kind of background work of one owner (a load, an analysis, a save): the work runs
/// on QtConcurrent's pool and its result comes back on this object's thread.
///
/// - Latest wins: start() cancels the job before it, and a generation counter drops
///   whatever a superseded or cancelled job still returns, so `done` runs only for the
///   latest request, and never after cancel() or the destruction of this object.
/// - The worker gets a Control, shared with this object and kept alive by whichever of
///   the two ends last; it never sees `this`. It checks isCancelled() (or hands
///   cancelFlag() to core's LoadOptions) and reports progress in permille.
/// - The destructor sets the cancel flag and returns: nothing waits for the worker. A
///   worker that cannot check the flag finishes on its own and its result is dropped
///   (QCoreApplication's destructor waits for the pool before the process exits).
/// - Progress is polled on this object's thread every few tens of milliseconds and
///   emitted only when it moved: at most one signal per poll, 0.1% steps (heaptrack's
///   "don't spam the progress bar").
///
/// The result arrives through a QFutureWatcher connected before it is given the future,
/// the documented race-free order: a job that has already finished is reported too.
class BackgroundJob : public QObject {
    Q_OBJECT
public:
    /// What the worker sees of its job.
    class Control {
    public:
        bool isCancelled() const { return m_cancel.load(std::memory_order_relaxed); }
        /// For core APIs that take a flag (LoadOptions::cancel).
        const std::atomic<bool>* cancelFlag() const { return &m_cancel; }
        /// 0..1000, clamped.
        void setProgress(int permille);
        /// `done` of `total` (a core ProgressFn); nothing when total is 0.
        void setProgress(uint64_t done, uint64_t total);
        int progress() const { return m_permille.load(std::memory_order_relaxed); }
        void cancel() { m_cancel.store(true); }

    private:
        std::atomic<bool> m_cancel{false};
        std::atomic<int> m_permille{0};
    };

    explicit BackgroundJob(QObject* parent = nullptr);
    ~BackgroundJob() override;

    /// Runs `work(Control&)` on the pool and, if this is still the latest request
    /// when it returns, `done(result)` on this object's thread. `work` must not throw
    /// (catch and return the error in the result); it captures values, never an owner.
    template <typename Work, typename Done>
    void start(Work work, Done done);
    /// Cancels the running job: the flag is set and its result will be dropped.
    void cancel();
    /// Waits for the running job and calls its `done` now, on this thread, instead of
    /// when the event loop gets to it (an export that needs the answer it is computing).
    /// Returns false when no job is running.
    bool finishNow();
    bool isRunning() const { return m_control != nullptr; }
    /// The running job's progress, 0..1000; 0 when idle.
    int progress() const { return m_control ? m_control->progress() : 0; }

signals:
    /// The running job's progress moved (0..1000). Not emitted at the start (it is 0).
    void progressChanged(int permille);

private:
    /// Cancels the previous job, starts polling and returns the new generation.
    quint64 begin(const std::shared_ptr<Control>& control);
    /// True (and the job is over) when `generation` is still the latest request.
    bool end(quint64 generation);
    void pollProgress();

    std::shared_ptr<Control> m_control; ///< the running job's; null when idle
    std::function<void()> m_finishNow;  ///< the running job's wait-and-deliver
    quint64 m_generation = 0;
    QTimer* m_progressTimer;
    int m_lastPermille = 0;
};

template <typename Work, typename Done>
void BackgroundJob::start(Work work, Done done)
{
    using Result = std::invoke_result_t<Work&, Control&>;
    auto control = std::make_shared<Control>();
    const quint64 generation = begin(control);
    // The watcher is a child: destroying this object destroys it, and with it the
    // connection that would call `done`.
    auto* watcher = new QFutureWatcher<Result>(this);
    auto deliver = std::make_shared<Done>(std::move(done));
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, deliver] {
        watcher->deleteLater();
        if (end(generation))
            (*deliver)(watcher->result());
    });
    m_finishNow = [this, watcher, generation, deliver] {
        watcher->waitForFinished();
        if (!end(generation))
            return;
        ++m_generation; // delivered here: the watcher's own signal, still to come, is stale
        (*deliver)(watcher->result());
    };
    // The worker writes sizes in the units the user had when the work was asked for.
    watcher->setFuture(QtConcurrent::run([control, units = byteUnits(), work = std::move(work)]() mutable {
        const ScopedByteUnits scope(units);
        return work(*control);
    }));
}

} // namespace headroom
