// SPDX-License-Identifier: MIT
#pragma once

#include "core/loader.h"

#include <QObject>
#include <QString>

#include <memory>
#include <vector>

class QTimer;

Q_DECLARE_METATYPE(std::shared_ptr<const headroom::LoadedTrace>)

namespace headroom {

struct TimelineCurves;

/// Loads snapshot files off the GUI thread. Only the latest request counts: a new
/// load() or cancel() cancels the running job cooperatively (its atomic flag) and
/// drops whatever it still produces. The worker shares only a small job state with
/// the controller (never `this`); progress is polled from it on the GUI thread, so
/// every signal is emitted on the GUI thread.
class LoadController : public QObject {
    Q_OBJECT
public:
    explicit LoadController(QObject* parent = nullptr);
    ~LoadController() override;

    void load(const QString& path);
    void cancel();
    bool isLoading() const { return m_job != nullptr; }
    /// The path of the running load; empty when idle.
    QString loadingPath() const { return m_loadingPath; }

signals:
    void loadStarted(const QString& path);
    /// 0..1000, at most every few tens of milliseconds and only when it moved.
    void progressChanged(int permille);
    /// Just before traceLoaded: the timeline's curves for every device, prepared in the
    /// worker so that showing the file does not compute them on the GUI thread.
    void curvesPrepared(const std::shared_ptr<const headroom::LoadedTrace>& trace,
                        std::vector<std::shared_ptr<const headroom::TimelineCurves>> curves);
    void traceLoaded(const QString& path, std::shared_ptr<const headroom::LoadedTrace> trace);
    void loadFailed(const QString& path, const QString& message);
    void loadCancelled(const QString& path);

private:
    struct Job;
    struct Result;

    void pollProgress();
    void finish(quint64 generation, const Result& result);

    std::shared_ptr<Job> m_job;
    quint64 m_generation = 0;
    QString m_loadingPath;
    QTimer* m_progressTimer;
    int m_lastPermille = -1;
};

} // namespace headroom
