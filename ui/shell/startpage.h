// SPDX-License-Identifier: MIT
#pragma once

#include <QElapsedTimer>
#include <QWidget>

class QListWidget;
class QListWidgetItem;

namespace headroom {

class DeferredRebuild;
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

    /// The recent files as listed (brought up to date first when the page was hidden).
    QListWidget* recentList();
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
    /// The list is refreshed now when the page is on screen, else when it is next shown:
    /// opening a file updates it while the page is hidden, in the turn that shows the file.
    DeferredRebuild* m_refresh = nullptr;
};

} // namespace headroom
