// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerdata.h"

#include <QObject>

namespace headroom {

class BackgroundJob;

/// Runs ExplorerData::compute on the thread pool (a BackgroundJob) after a load or a
/// device change. Latest wins: a newer request or clear() cancels the running analysis
/// and nothing arrives from it. ExplorerData::compute cannot check a flag, so a cancelled
/// analysis that has already begun runs to its end on the pool and its result is
/// dropped; one still queued behind other work does not start at all.
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
    /// The capacity the user chose for `trace` (0: unknown, over the file's own); every
    /// device of that file is analysed against it from the next analysis on. Opening another
    /// file forgets it.
    void setChosenCapacity(const std::shared_ptr<const LoadedTrace>& trace, int64_t bytes);
    /// What `trace` is judged against: the choice made for it, the default capacity.
    CapacityChoice capacityFor(const std::shared_ptr<const LoadedTrace>& trace) const;
    bool isRunning() const;

signals:
    void analysisStarted();
    void analysisAvailable(const headroom::ExplorerDataPtr& data);

private:
    BackgroundJob* m_job;
    int64_t m_defaultCapacity = 0;
    std::weak_ptr<const LoadedTrace> m_chosenFor;
    int64_t m_chosen = 0;
};

} // namespace headroom
