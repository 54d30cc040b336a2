// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/loader.h"
#include "ui/explorer/explorerdata.h"

#include <QObject>
#include <QString>

#include <memory>
#include <vector>

namespace headroom {

class BackgroundJob;
struct TimelineCurves;

/// Loads snapshot files off the GUI thread through a BackgroundJob. Only the latest
/// request counts: a new load() or cancel() cancels the running job cooperatively (the
/// loader checks its flag) and drops whatever it still produces. Every signal is emitted
/// on the GUI thread.
class LoadController : public QObject {
    Q_OBJECT
public:
    explicit LoadController(QObject* parent = nullptr);
    ~LoadController() override;

    void load(const QString& path);
    void cancel();
    bool isLoading() const;
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
    struct Result;

    void finish(const Result& result);

    BackgroundJob* m_job;
    QString m_loadingPath;
};

} // namespace headroom
