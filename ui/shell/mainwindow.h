// SPDX-License-Identifier: MIT
#pragma once

#include "ui/shell/preferences.h"

#include <QMainWindow>

#include <memory>

class QAction;
class QActionGroup;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QToolBar;

namespace headroom {

struct LoadedTrace;
class BackgroundJob;
class LoadController;
class Explorer;
class FileChangeWatcher;
class NavigationActions;
class RecentFiles;
class ReloadBar;
class StartPage;
class TimelineView;

/// Files, menus, the device picker and the status bar. The views live in an Explorer
/// (the composition root) as docks; loading runs in a LoadController and saving in a
/// BackgroundJob, so the window stays responsive and a failed load leaves the previous
/// file on screen.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void openFile(const QString& path);
    void reload();

    LoadController* loadController() const { return m_loader; }
    TimelineView* timelineView() const;
    Explorer* explorer() const { return m_explorer; }
    std::shared_ptr<const LoadedTrace> trace() const { return m_trace; }
    QString currentPath() const { return m_path; }
    /// Shows the device with this ordinal (as in the file); false if there is none.
    bool selectDevice(int ordinal);
    /// Index into `snapshot.devices` of the device on screen; -1 without a file.
    int currentDevice() const;
    /// File ▸ Save As: writes the native format (.hrt) in the background (the file on
    /// screen as it is now); saved() or saveFailed() follows, and on failure an error box
    /// naming the file. The write is atomic: a failed save leaves an existing file as it was.
    void saveAs(const QString& path);
    bool isSaving() const;
    /// File ▸ Export Postmortem into `directory`.
    bool exportPostmortem(const QString& directory, QString* error);

    StartPage* startPage() const { return m_startPage; }
    bool startPageShown() const;
    ReloadBar* reloadBar() const { return m_reloadBar; }
    FileChangeWatcher* fileWatcher() const { return m_watcher; }
    const Preferences& preferences() const { return m_prefs; }
    /// Saves and applies new preferences (what the Preferences dialog does on OK).
    void setPreferences(const Preferences& prefs);
    /// Settings ▸ Preferences, Help ▸ Keyboard Shortcuts, Help ▸ About (window-modal, not blocking).
    void showPreferences();
    /// Settings ▸ Your Categories: the rules dialog; accepted, the Breakdown shows them.
    void showUserCategories();
    /// The user's category rules (saved text) on the Breakdown; false, with a status message,
    /// when the text is not a valid rules file.
    bool applyUserCategories(const QString& rulesText);
    void showShortcuts();
    void showAbout();

signals:
    void saved(const QString& path);
    void saveFailed(const QString& path, const QString& message);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void createActions();
    void showOpenDialog();
    void setTrace(const QString& path, std::shared_ptr<const LoadedTrace> trace);
    void showDevice(int index);
    void showLoadError(const QString& path, const QString& message);
    void saveFinished(const QString& path, const QString& error);
    void setLoading(bool loading);
    void updateSummary();
    void setStartPageShown(bool shown);
    void fileChangedOnDisk(const QString& path);

    LoadController* m_loader;
    Explorer* m_explorer;
    RecentFiles* m_recent = nullptr;
    QComboBox* m_deviceCombo;
    QAction* m_deviceComboAction = nullptr;
    QAction* m_reloadAction = nullptr;
    QAction* m_saveAsAction = nullptr;
    QLabel* m_summary;
    QProgressBar* m_progress;
    QPushButton* m_cancelButton;
    BackgroundJob* m_saveJob;
    QProgressBar* m_saveProgress; ///< busy while a save runs: the writer reports no progress
    StartPage* m_startPage = nullptr;
    ReloadBar* m_reloadBar = nullptr;
    QToolBar* m_reloadToolBar = nullptr;
    QToolBar* m_deviceToolBar = nullptr; ///< Zoom to Fit and the device picker: not on the start page
    FileChangeWatcher* m_watcher = nullptr;
    NavigationActions* m_navigation = nullptr;
    Preferences m_prefs;

    std::shared_ptr<const LoadedTrace> m_trace;
    QString m_path;
};

} // namespace headroom
