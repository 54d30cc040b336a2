// SPDX-License-Identifier: MIT
#pragma once

#include <QElapsedTimer>
#include <QWidget>

class QListWidget;
class QListWidgetItem;

namespace headroom {

class RecentFiles;

/// What the window shows while no file is open (hotspot's and heaptrack's start
/// pages): open a file, the recent files with their peak and when they were opened, the
/// bundled example snapshots, and how to record a snapshot, with the snippet to copy.
class StartPage : public QWidget {
    Q_OBJECT
public:
    explicit StartPage(RecentFiles* recent, QWidget* parent = nullptr);

    /// The bundled examples found next to the executable (installed) or in the source
    /// tree (a build): absolute paths.
    static QStringList exampleFiles();
    /// The snippet shown under "Record a snapshot".
    static QString recordingSnippet();

    QListWidget* recentList() const { return m_recent; }
    QListWidget* exampleList() const { return m_examples; }

signals:
    void openRequested();
    void fileRequested(const QString& path);

private:
    void refreshRecent();
    void activate(QListWidgetItem* item);

    RecentFiles* m_recentFiles;
    QListWidget* m_recent;
    QListWidget* m_examples;
    QString m_lastRequest;
    QElapsedTimer m_lastRequestTime;
};

} // namespace headroom
