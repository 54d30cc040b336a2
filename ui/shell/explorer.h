// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerdata.h"
#include "ui/explorer/selection.h"
#include "ui/shell/loadcontroller.h" // the LoadedTrace pointer metatype

#include <QJsonObject>
#include <QObject>

#include <memory>
#include <vector>

class QAction;
class QDockWidget;
class QMainWindow;
class QMenu;

namespace headroom {

class AllocationsView;
class AllocatorView;
class AnalysisController;
class BookmarksView;
class BreakdownView;
class CaptureBar;
class CompareView;
class RanksView;
class BudgetView;
class DiagnosisView;
class ModuleView;
class ExplorerView;
class StackView;
class TimelineView;
class WhatIfView;

/// The composition root (hotspot's ResultsPage): builds every view as a dock widget of
/// the main window, owns the shared Selection and the background analysis, and is the
/// one place that hands data and selection changes to the views (a loop over the view
/// interface, not a web of connections between views).
class Explorer : public QObject {
    Q_OBJECT
public:
    explicit Explorer(QMainWindow* window);
    ~Explorer() override;

    /// A newly loaded file or another device: the timeline shows the raw curve at once,
    /// the analysis runs in the background and fills in every view.
    void showDevice(std::shared_ptr<const LoadedTrace> trace, int deviceIndex);

    Selection* selection() const { return m_selection; }
    AnalysisController* analysis() const { return m_analysis; }
    ExplorerDataPtr data() const { return m_data; }
    /// Every view has the current analysis (dataAvailable was emitted for it).
    bool dataDelivered() const { return m_data && m_delivered; }

    const std::vector<ExplorerView*>& views() const { return m_views; }
    /// By viewId(): timeline, breakdown, allocations, stacks, diagnosis, allocator, whatif.
    ExplorerView* view(const QString& id) const;
    QDockWidget* dock(const QString& id) const;
    /// Raises a view's dock tab.
    void showView(const QString& id);

    TimelineView* timeline() const { return m_timeline; }
    BreakdownView* breakdown() const { return m_breakdown; }
    AllocationsView* allocations() const { return m_allocations; }
    StackView* stacks() const { return m_stacks; }
    ModuleView* modules() const { return m_modules; }
    DiagnosisView* diagnosis() const { return m_diagnosis; }
    AllocatorView* allocator() const { return m_allocator; }
    WhatIfView* whatIf() const { return m_whatIf; }
    BookmarksView* bookmarks() const { return m_bookmarks; }
    CompareView* compare() const { return m_compare; }
    /// What the open capture cannot show, above the timeline.
    CaptureBar* captureBar() const { return m_captureBar; }
    RanksView* ranks() const { return m_ranks; }
    BudgetView* budget() const { return m_budget; }

    /// The user's annotations to save with the trace (the native format's USER section):
    /// the opened file's own user data (`base` when no file is shown) with the bookmarks of
    /// every device and the what-if panel's settings. JSON text.
    std::string userData(const std::string& base) const;

    /// View ▸ (x axis, zoom, panels, layout reset, theme) and per-view export entries.
    void populateViewMenu(QMenu* menu);
    void populateExportMenu(QMenu* menu);
    /// File ▸ Export Postmortem (enabled while an analysis is on screen).
    void addPostmortemAction(QMenu* menu);
    /// After a postmortem was written into `directory`: a status message and a box that opens
    /// the folder (an export that says nothing looks like one that did nothing).
    void announcePostmortem(const QString& directory);
    /// Zoom to fit (View menu and tool bar); valid after populateViewMenu.
    QAction* zoomToFitAction() const { return m_zoomFitAction; }
    /// The start page: hides every dock (remembering the layout) or brings them back.
    void setDocksHidden(bool hidden);
    bool docksHidden() const { return m_docksHidden; }
    /// The view that has the keyboard focus (the timeline when none has).
    ExplorerView* currentView() const;
    /// The layout that restoreLayout brings back (saved in QSettings on close).
    void saveLayout() const;
    void restoreLayout();
    void resetLayout();

signals:
    /// The analysis of the device on screen arrived and the views show it.
    void dataAvailable(const headroom::ExplorerDataPtr& data);
    /// The Ranks view asks to show another loaded rank file (or device) in the window.
    void traceRequested(const QString& path, std::shared_ptr<const headroom::LoadedTrace> trace, int device);

private:
    /// The diagnosis's capacity first move from the what-if panel's ladder (or the report's).
    void followWhatIfLadder();
    /// The capacity chosen in the what-if becomes the file's: the device is analysed again.
    void adoptCapacity(qint64 bytes);
    /// `above`: a bar shown over the view inside its dock (the timeline's capture bar).
    QDockWidget* addDock(ExplorerView* view, Qt::DockWidgetArea area, QWidget* above = nullptr);
    void setData(const ExplorerDataPtr& data);
    void deliverData(quint64 generation, size_t next);
    void exportView(ExplorerView* view);
    void syncAxisActions();
    void loadBookmarks(const std::shared_ptr<const LoadedTrace>& trace, int deviceIndex);
    void storeBookmarks();

    QMainWindow* m_window;
    Selection* m_selection;
    AnalysisController* m_analysis;
    TimelineView* m_timeline;
    BreakdownView* m_breakdown;
    AllocationsView* m_allocations;
    StackView* m_stacks;
    ModuleView* m_modules;
    DiagnosisView* m_diagnosis;
    AllocatorView* m_allocator;
    WhatIfView* m_whatIf;
    BookmarksView* m_bookmarks;
    CompareView* m_compare;
    RanksView* m_ranks;
    BudgetView* m_budget;
    CaptureBar* m_captureBar;
    std::weak_ptr<const LoadedTrace> m_examinedTrace; ///< the file the capture bar speaks of
    /// The shown file's user data, kept up to date with the bookmarks of every device.
    QJsonObject m_user;
    std::weak_ptr<const LoadedTrace> m_userTrace;
    int m_userDevice = -1; ///< device ordinal whose bookmarks the view shows
    std::vector<ExplorerView*> m_views;
    std::vector<QDockWidget*> m_docks;
    QByteArray m_defaultLayout;
    QByteArray m_layoutBeforeHiding; ///< while the start page is shown
    bool m_docksHidden = false;
    QAction* m_timeAxisAction = nullptr;
    QAction* m_indexAxisAction = nullptr;
    QAction* m_zoomFitAction = nullptr;
    ExplorerDataPtr m_data;
    quint64 m_deliveryGeneration = 0;
    bool m_delivered = false;
    /// The label of the what-if Allocator section's curve on the timeline: its "cleared" takes
    /// away that curve only, never the one the timeline's own toggle replayed since.
    QString m_panelCurveLabel;
};

} // namespace headroom
