// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorerdata.h"

#include <QObject>

namespace headroom {

/// Runs ExplorerData::compute on the thread pool after a load or a device change.
/// Latest wins: a newer request makes every older result stale (a generation counter,
/// as hotspot's JobTracker); the worker captures values only, never `this`, and the
/// result comes back through QFuture::then on this object's thread.
class AnalysisController : public QObject {
    Q_OBJECT
public:
    explicit AnalysisController(QObject* parent = nullptr);

    void analyze(std::shared_ptr<const LoadedTrace> trace, int deviceIndex);
    /// Drops whatever is running; nothing arrives from it.
    void clear();
    /// The capacity to assume when a file does not tell it (bytes, 0: none); applies to
    /// the next analysis.
    void setDefaultCapacity(int64_t bytes) { m_defaultCapacity = bytes; }
    int64_t defaultCapacity() const { return m_defaultCapacity; }
    bool isRunning() const { return m_running; }

signals:
    void analysisStarted();
    void analysisAvailable(const headroom::ExplorerDataPtr& data);

private:
    quint64 m_generation = 0;
    bool m_running = false;
    int64_t m_defaultCapacity = 0;
};

} // namespace headroom
