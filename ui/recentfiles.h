// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QStringList>

class QMenu;

namespace headroom {

/// The "Open Recent" list, kept in QSettings (most recent first, at most kMaxEntries)
/// and mirrored into a menu whose actions emit fileRequested().
class RecentFiles : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxEntries = 8;

    explicit RecentFiles(QMenu* menu, QObject* parent = nullptr);

    QStringList files() const { return m_files; }
    void add(const QString& path);
    void remove(const QString& path);
    void clear();

signals:
    void fileRequested(const QString& path);

private:
    void save();
    void rebuildMenu();

    QMenu* m_menu;
    QStringList m_files;
};

} // namespace headroom
