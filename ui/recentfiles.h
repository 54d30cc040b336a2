// SPDX-License-Identifier: MIT
#pragma once

#include <QDateTime>
#include <QObject>
#include <QStringList>

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
    void add(const QString& path);
    /// Remembers the peak of a file in the list (and that it was opened now).
    void setPeak(const QString& path, qint64 peakBytes);
    RecentFileInfo info(const QString& path) const;
    void remove(const QString& path);
    void clear();

signals:
    void fileRequested(const QString& path);
    /// The list or its details changed (the start page redraws).
    void changed();

private:
    void save();
    void rebuildMenu();

    QMenu* m_menu;
    QStringList m_files;
};

} // namespace headroom
