// SPDX-License-Identifier: MIT
#pragma once

#include <QMainWindow>

#include <memory>

class QAction;
class QActionGroup;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;

namespace headroom {

struct LoadedTrace;
class LoadController;
class RecentFiles;
class TimelineView;

/// Files, menus, the device picker and the status bar. The chart is a TimelineView;
/// loading runs in a LoadController, so the window stays responsive and a failed
/// load leaves the previous file on screen.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void openFile(const QString& path);
    void reload();

    LoadController* loadController() const { return m_loader; }
    TimelineView* timelineView() const { return m_view; }
    std::shared_ptr<const LoadedTrace> trace() const { return m_trace; }
    QString currentPath() const { return m_path; }
    /// Shows the device with this ordinal (as in the file); false if there is none.
    bool selectDevice(int ordinal);
    /// Index into `snapshot.devices` of the device on screen; -1 without a file.
    int currentDevice() const;

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createActions();
    void showOpenDialog();
    void setTrace(const QString& path, std::shared_ptr<const LoadedTrace> trace);
    void showDevice(int index);
    void showLoadError(const QString& path, const QString& message);
    void setLoading(bool loading);
    void syncAxisActions();
    void updateSummary();

    LoadController* m_loader;
    TimelineView* m_view;
    RecentFiles* m_recent = nullptr;
    QComboBox* m_deviceCombo;
    QAction* m_deviceComboAction = nullptr;
    QAction* m_reloadAction = nullptr;
    QAction* m_timeAxisAction = nullptr;
    QAction* m_indexAxisAction = nullptr;
    QLabel* m_summary;
    QProgressBar* m_progress;
    QPushButton* m_cancelButton;

    std::shared_ptr<const LoadedTrace> m_trace;
    QString m_path;
};

} // namespace headroom
