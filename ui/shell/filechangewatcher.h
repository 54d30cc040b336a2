// SPDX-License-Identifier: MIT
#pragma once

#include <QDateTime>
#include <QObject>
#include <QString>

class QFileSystemWatcher;
class QTimer;

namespace headroom {

/// Tells when the open file was rewritten on disk (a training job that dumps a new
/// snapshot every N steps), once the writer is done: the size and modification time must
/// hold still for a moment first. Files replaced by a rename (atomic saves) and files
/// deleted and written again are followed through their directory.
class FileChangeWatcher : public QObject {
    Q_OBJECT
public:
    explicit FileChangeWatcher(QObject* parent = nullptr);

    /// Starts watching `path` from its current state (after every load); empty stops.
    void watch(const QString& path);
    QString path() const { return m_path; }
    /// How long the file must stay unchanged before `changed` (default 600 ms).
    void setSettleMs(int ms);

signals:
    /// The file differs from what was loaded and has stopped changing.
    void changed(const QString& path);

private:
    struct Stamp {
        bool exists = false;
        qint64 size = -1;
        QDateTime modified;
        bool operator==(const Stamp&) const = default;
    };
    static Stamp stampOf(const QString& path);
    void onSomethingChanged();
    void settle();
    void rewatch();

    QFileSystemWatcher* m_watcher;
    QTimer* m_settle;
    QString m_path;
    Stamp m_loaded;    ///< the file as it was loaded
    Stamp m_lastProbe; ///< the previous look while waiting for it to settle
};

} // namespace headroom
