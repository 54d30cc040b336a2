// SPDX-License-Identifier: MIT
#pragma once

#include <QDateTime>
#include <QObject>
#include <QStringList>
#include <QVariantMap>

class QMenu;

namespace headroom {

/// What the start page shows for a recent file: when it was last opened and its peak.
struct RecentFileInfo {
    QDateTime opened;      ///< invalid: unknown
    qint64 peakBytes = -1; ///< the largest device peak; -1: unknown
};

/// The "Open Recent" list, kept in QSettings (most recent first, at most kMaxEntries)
/// and mirrored into a menu whose actions emit fileRequested().
class RecentFiles : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxEntries = 8;

    explicit RecentFiles(QMenu* menu, QObject* parent = nullptr);

    QStringList files() const { return m_files; }
    /// Puts `path` first, opened now, with its peak (bytes; -1: keep what is known).
    void add(const QString& path, qint64 peakBytes = -1);
    RecentFileInfo info(const QString& path) const;
    void remove(const QString& path);
    void clear();

signals:
    void fileRequested(const QString& path);
    /// The list or its details changed (the start page redraws).
    void changed();

private:
    /// Writes the list and the details of the files still in it, once.
    void save(QVariantMap info);
    void rebuildMenu();

    QMenu* m_menu;
    QStringList m_files;
};

} // namespace headroom
