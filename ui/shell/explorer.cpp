// SPDX-License-Identifier: MIT
#include "ui/shell/explorer.h"

#include "core/report/devicereport.h"

#include "ui/explorer/analysiscontroller.h"
#include "ui/explorer/logging.h"
#include "ui/explorer/viewexport.h"
#include "ui/shell/postmortem.h"
#include "ui/timeline/capturebar.h"
#include "ui/timeline/timelineview.h"
#include "ui/views/allocationsview.h"
#include "ui/views/allocatorview.h"
#include "ui/views/bookmarksview.h"
#include "ui/views/breakdownview.h"
#include "ui/views/compareview.h"
#include "ui/views/diagnosisview.h"
#include "ui/views/moduleview.h"
#include "ui/views/ranksview.h"
#include "ui/views/budgetview.h"
#include "ui/views/stackview.h"
#include "ui/whatif/projectedtimelinejob.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"

#include "ui/shell/theme.h"

#include <QActionGroup>
#include <QUrl>
#include <QStatusBar>
#include <QPushButton>
#include <QDir>
#include <QDesktopServices>
#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFileDialog>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QVBoxLayout>

namespace headroom {

namespace {
const QString kLayoutKey = QStringLiteral("explorer/layout");
const QString kLayoutVersionKey = QStringLiteral("explorer/layoutVersion");
constexpr int kLayoutVersion = 8; // 2: the what-if dock, 3: notes, 4: compare, 5: ranks, 6: wider what-if group, 7: modules, 8: budget
} // namespace

Explorer::Explorer(QMainWindow* window)
    : QObject(window)
    , m_window(window)
    , m_selection(new Selection(this))
    , m_analysis(new AnalysisController(this))
{
    m_timeline = new TimelineView(m_selection);
    m_breakdown = new BreakdownView(m_selection);
    m_allocations = new AllocationsView(m_selection);
    m_stacks = new StackView(m_selection);
    m_modules = new ModuleView(m_selection);
    m_diagnosis = new DiagnosisView(m_selection);
    m_allocator = new AllocatorView(m_selection);
    m_whatIf = new WhatIfView(m_selection);
    m_bookmarks = new BookmarksView(m_selection);
    m_compare = new CompareView(m_selection);
    m_ranks = new RanksView(m_selection);
    m_budget = new BudgetView(m_selection);
    m_captureBar = new CaptureBar;
    m_captureBar->hide();
    connect(m_captureBar, &CaptureBar::findingsReady, m_captureBar, &QWidget::setVisible);
    connect(m_captureBar, &CaptureBar::dismissed, m_captureBar, &QWidget::hide);

    window->setDockNestingEnabled(true);
    window->setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowNestedDocks | QMainWindow::AllowTabbedDocks);
    QDockWidget* timeline = addDock(m_timeline, Qt::TopDockWidgetArea, m_captureBar);
    QDockWidget* allocations = addDock(m_allocations, Qt::BottomDockWidgetArea);
    QDockWidget* stacks = addDock(m_stacks, Qt::BottomDockWidgetArea);
    QDockWidget* modules = addDock(m_modules, Qt::BottomDockWidgetArea);
    QDockWidget* allocator = addDock(m_allocator, Qt::BottomDockWidgetArea);
    QDockWidget* breakdown = addDock(m_breakdown, Qt::BottomDockWidgetArea);
    QDockWidget* diagnosis = addDock(m_diagnosis, Qt::BottomDockWidgetArea);
    QDockWidget* whatIf = addDock(m_whatIf, Qt::BottomDockWidgetArea);
    QDockWidget* bookmarks = addDock(m_bookmarks, Qt::BottomDockWidgetArea);
    QDockWidget* compare = addDock(m_compare, Qt::BottomDockWidgetArea);
    QDockWidget* ranks = addDock(m_ranks, Qt::BottomDockWidgetArea);
    QDockWidget* budget = addDock(m_budget, Qt::BottomDockWidgetArea);
    window->splitDockWidget(allocations, breakdown, Qt::Horizontal);
    window->tabifyDockWidget(allocations, stacks);
    window->tabifyDockWidget(stacks, modules);
    window->tabifyDockWidget(modules, allocator);
    window->tabifyDockWidget(allocator, bookmarks);
    window->tabifyDockWidget(breakdown, diagnosis);
    window->tabifyDockWidget(diagnosis, whatIf);
    window->tabifyDockWidget(whatIf, compare);
    window->tabifyDockWidget(compare, ranks);
    window->tabifyDockWidget(ranks, budget);
    allocations->raise();
    breakdown->raise();
    window->resizeDocks({timeline, allocations}, {55, 45}, Qt::Vertical);
    // The right-hand group holds the what-if panel, whose chart and ladder need the room.
    window->resizeDocks({allocations, breakdown}, {45, 55}, Qt::Horizontal);
    m_defaultLayout = window->saveState(kLayoutVersion);

    connect(m_selection, &Selection::changed, this, [this](const SelectionState& state, Selection::Fields fields) {
        for (ExplorerView* v : m_views)
            v->selectionChanged(state, fields);
    });
    connect(m_analysis, &AnalysisController::analysisAvailable, this, &Explorer::setData);
    connect(m_bookmarks, &BookmarksView::bookmarksChanged, this, &Explorer::storeBookmarks);
    connect(m_ranks, &RanksView::showRequested, this, &Explorer::traceRequested);
    connect(m_timeline, &TimelineView::xAxisModeChanged, this, &Explorer::syncAxisActions);
    // A setting replayed in the what-if's Allocator section is drawn over the recorded curve.
    connect(m_whatIf->panel(), &WhatIfPanel::allocatorCurveReady, m_timeline,
            [this](const std::shared_ptr<const std::vector<int64_t>>& curve, const QString& label) {
                m_panelCurveLabel = label;
                m_timeline->setSimulatedReserved(*curve, label);
            });
    // The panel back at the recorded setting takes its own curve away; the timeline's
    // "Simulated reserved" toggle shares the slot and its curve stays (the panel's replay at
    // the recorded setting finishing after the user ticked the box cleared it).
    connect(m_whatIf->panel(), &WhatIfPanel::allocatorCurveCleared, m_timeline, [this] {
        if (!m_panelCurveLabel.isEmpty() && m_timeline->state().simulatedLabel == m_panelCurveLabel)
            m_timeline->clearSimulatedReserved();
        m_panelCurveLabel.clear();
    });
    // The diagnosis's first move follows the what-if's ladder once the panel knows more than
    // the file (measured values given) or starts elsewhere (levers moved): one answer.
    connect(m_whatIf->panel(), &WhatIfPanel::ladderChanged, this, &Explorer::followWhatIfLadder);
    // One capacity per open file: the one chosen in the what-if is the Diagnosis's, the
    // timeline's capacity line and the report's too.
    connect(m_whatIf->panel(), &WhatIfPanel::capacityChosen, this, &Explorer::adoptCapacity);
    // As a lever moves, the projected run is drawn over the measured one.
    connect(m_whatIf->panel()->projectedTimeline(), &ProjectedTimelineJob::ready, m_timeline, &TimelineView::setProjected);
    connect(m_whatIf->panel()->projectedTimeline(), &ProjectedTimelineJob::cleared, m_timeline,
            &TimelineView::clearProjected);
}

Explorer::~Explorer() = default;

void Explorer::followWhatIfLadder()
{
    const WhatIfPanel* panel = m_whatIf->panel();
    const StatedConfig stated = panel->settings().stated;
    const bool given = stated.microBatch || stated.seq || stated.precision || stated.devices;
    const std::vector<std::string> moved = panel->ladderStart().differences(panel->measuredConfig(), panel->microBatchUnits());
    if (!m_data || (!given && moved.empty()) || panel->ladder().rungs.empty() ||
        m_data->capacity.bytes != panel->device().capacityBytes) {
        m_diagnosis->setCapacityFirstMove({});
        return;
    }
    std::string from = "as run (with the measured values given in the what-if panel)";
    if (!moved.empty()) {
        from = "at the what-if panel's levers (";
        for (size_t i = 0; i < moved.size(); ++i)
            from += (i ? ", " : "") + moved[i];
        from += ")";
    }
    m_diagnosis->setCapacityFirstMove(QString::fromStdString(ladderFirstMove(panel->ladder(), panel->device(), from)));
}

void Explorer::adoptCapacity(qint64 bytes)
{
    if (!m_data || m_data->capacity.bytes == bytes)
        return;
    // Analysed again, the views keeping what they show until it arrives (no reset as for a
    // device change): the selection, the levers and the calibration stay.
    m_analysis->setChosenCapacity(m_data->trace, bytes);
    m_analysis->analyze(m_data->trace, int(m_data->deviceIndex));
}

QDockWidget* Explorer::addDock(ExplorerView* view, Qt::DockWidgetArea area, QWidget* above)
{
    auto* dock = new QDockWidget(view->viewTitle(), m_window);
    dock->setObjectName(view->viewId() + QStringLiteral("Dock"));
    if (above) {
        auto* box = new QWidget(dock);
        auto* layout = new QVBoxLayout(box);
        layout->setContentsMargins(0, 0, 0, 0);
        layout->setSpacing(0);
        layout->addWidget(above);
        layout->addWidget(view->widget(), 1);
        box->setFocusProxy(view->widget());
        dock->setWidget(box);
    } else {
        dock->setWidget(view->widget());
    }
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    m_window->addDockWidget(area, dock);
    m_views.push_back(view);
    m_docks.push_back(dock);
    return dock;
}

void Explorer::showDevice(std::shared_ptr<const LoadedTrace> trace, int deviceIndex)
{
    m_data.reset();
    m_delivered = false;
    ++m_deliveryGeneration; // a delivery still staging belongs to the previous device
    for (ExplorerView* v : m_views)
        if (v != m_timeline)
            v->setData(nullptr);
    m_timeline->setTrace(trace, deviceIndex);
    if (trace != m_examinedTrace.lock()) {
        // Per file, not per device: the findings name the devices they concern.
        m_examinedTrace = trace;
        m_captureBar->hide();
        m_captureBar->examine(trace);
    }
    if (m_timeAxisAction)
        syncAxisActions();
    const bool valid = trace && deviceIndex >= 0 && deviceIndex < int(trace->timelines.size());
    if (valid && !trace->snapshot.userData.empty())
        m_whatIf->setPendingSettings(QString::fromStdString(trace->snapshot.userData));
    if (valid)
        loadBookmarks(trace, deviceIndex);
    m_selection->reset(deviceIndex, valid ? trace->timelines[size_t(deviceIndex)].peakEventIndex : SelectionState::kNone);
    if (valid)
        m_analysis->analyze(std::move(trace), deviceIndex);
    else
        m_analysis->clear();
}

void Explorer::setData(const ExplorerDataPtr& data)
{
    // One view per event-loop turn: building every view's content at once kept the GUI
    // from repainting for about 100 ms on a million-event trace; staged, the longest
    // turn is the slowest single view.
    m_data = data;
    m_delivered = false;
    const quint64 generation = ++m_deliveryGeneration;
    deliverData(generation, 0);
}

void Explorer::deliverData(quint64 generation, size_t next)
{
    if (generation != m_deliveryGeneration)
        return; // newer data (or none) arrived meanwhile: that delivery takes over
    // A view on screen gets a turn of its own (it repaints after it); the views off screen
    // only build their models, a few milliseconds together, so they share one turn rather
    // than paying an event-loop turn and a repaint each.
    const bool shown = next < m_views.size() && ExplorerView::onScreen(m_views[next]->widget());
    while (next < m_views.size()) {
        ExplorerView* v = m_views[next++];
        QElapsedTimer t;
        t.start();
        v->setData(m_data);
        v->selectionChanged(m_selection->state(), Selection::All);
        qCInfo(lcTiming, "%s: %.1f ms%s (at %.1f ms)", qPrintable(v->viewId()), double(t.nsecsElapsed()) / 1e6,
               shown ? "" : " (not on screen)", msSinceStart());
        if (shown || (next < m_views.size() && ExplorerView::onScreen(m_views[next]->widget())))
            break;
    }
    if (next >= m_views.size()) { // the last view has it: no turn (and repaint) in between
        m_delivered = true;
        emit dataAvailable(m_data);
        return;
    }
    QTimer::singleShot(0, this, [this, generation, next] { deliverData(generation, next); });
}

std::string Explorer::userData(const std::string& base) const
{
    QJsonObject root = !m_userTrace.expired() ? m_user : QJsonDocument::fromJson(QByteArray::fromStdString(base)).object();
    if (m_data) {
        const QJsonObject panel =
            QJsonDocument::fromJson(m_whatIf->panel()->settingsJson().toUtf8()).object();
        if (panel.contains(QStringLiteral("whatif")))
            root[QStringLiteral("whatif")] = panel.value(QStringLiteral("whatif"));
    }
    if (root.isEmpty())
        return {};
    return QJsonDocument(root).toJson(QJsonDocument::Compact).toStdString();
}

void Explorer::loadBookmarks(const std::shared_ptr<const LoadedTrace>& trace, int deviceIndex)
{
    if (trace != m_userTrace.lock()) { // a new file: its own user data
        m_user = QJsonDocument::fromJson(QByteArray::fromStdString(trace->snapshot.userData)).object();
        m_userTrace = trace;
    }
    m_userDevice = trace->snapshot.devices[size_t(deviceIndex)].device;
    QJsonArray mine;
    for (const QJsonValue& v : m_user.value(QStringLiteral("bookmarks")).toArray()) {
        const QJsonValue d = v.toObject().value(QStringLiteral("device"));
        if (d.isUndefined() || d.toInt() == m_userDevice)
            mine.append(v);
    }
    const QSignalBlocker block(m_bookmarks); // loading is not a change
    m_bookmarks->setBookmarks(BookmarksView::fromJson(mine));
    m_timeline->setBookmarks(m_bookmarks->bookmarks());
}

void Explorer::storeBookmarks()
{
    m_timeline->setBookmarks(m_bookmarks->bookmarks());
    if (m_userTrace.expired())
        return;
    QJsonArray all;
    for (const QJsonValue& v : m_user.value(QStringLiteral("bookmarks")).toArray()) {
        const QJsonValue d = v.toObject().value(QStringLiteral("device"));
        if (!d.isUndefined() && d.toInt() != m_userDevice)
            all.append(v); // another device's bookmarks stay as they are
    }
    for (const QJsonValue& v : m_bookmarks->toJson()) {
        QJsonObject o = v.toObject();
        o[QStringLiteral("device")] = m_userDevice;
        all.append(o);
    }
    if (all.isEmpty())
        m_user.remove(QStringLiteral("bookmarks"));
    else
        m_user[QStringLiteral("bookmarks")] = all;
}

ExplorerView* Explorer::view(const QString& id) const
{
    for (ExplorerView* v : m_views)
        if (v->viewId() == id)
            return v;
    return nullptr;
}

QDockWidget* Explorer::dock(const QString& id) const
{
    for (size_t i = 0; i < m_views.size(); ++i)
        if (m_views[i]->viewId() == id)
            return m_docks[i];
    return nullptr;
}

void Explorer::showView(const QString& id)
{
    if (QDockWidget* d = dock(id)) {
        d->show();
        d->raise();
    }
}

void Explorer::populateViewMenu(QMenu* view)
{
    QMenu* menu = view;
    QMenu* axis = view->addMenu(tr("&X Axis"));
    auto* group = new QActionGroup(menu);
    m_timeAxisAction = axis->addAction(tr("&Time"));
    m_indexAxisAction = axis->addAction(tr("&Event Index"));
    for (QAction* a : {m_timeAxisAction, m_indexAxisAction}) {
        a->setCheckable(true);
        group->addAction(a);
    }
    connect(m_timeAxisAction, &QAction::triggered, this,
            [this] { m_timeline->setXAxisMode(TimelineView::XAxisMode::Time); });
    connect(m_indexAxisAction, &QAction::triggered, this,
            [this] { m_timeline->setXAxisMode(TimelineView::XAxisMode::EventIndex); });
    axis->addSeparator();
    QAction* toggle = axis->addAction(tr("Toggle Time / Event Index"), this, [this] {
        using Mode = TimelineView::XAxisMode;
        m_timeline->setXAxisMode(m_timeline->xAxisMode() == Mode::Time ? Mode::EventIndex : Mode::Time);
        syncAxisActions();
    });
    toggle->setObjectName(QStringLiteral("actionToggleXAxis"));
    toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
    QAction* fit = view->addAction(tr("&Zoom to Fit"), m_timeline, &TimelineView::zoomToFit);
    fit->setObjectName(QStringLiteral("actionZoomToFit"));
    fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    syncAxisActions();
    view->addSeparator();
    QMenu* docks = view->addMenu(tr("&Panels"));
    for (QDockWidget* d : m_docks)
        docks->addAction(d->toggleViewAction());
    docks->addSeparator();
    docks->addAction(tr("&Reset Layout"), this, &Explorer::resetLayout);
    m_zoomFitAction = fit;
}


void Explorer::syncAxisActions()
{
    const bool time = m_timeline->xAxisMode() == TimelineView::XAxisMode::Time;
    m_timeAxisAction->setEnabled(m_timeline->hasTime());
    m_timeAxisAction->setChecked(time);
    m_indexAxisAction->setChecked(!time);
}

void Explorer::populateExportMenu(QMenu* menu)
{
    QAction* current = menu->addAction(tr("Export &Current View…"), this, [this] { exportView(currentView()); });
    current->setObjectName(QStringLiteral("actionExportCurrentView"));
    current->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction* copyCurrent = menu->addAction(tr("C&opy Current View as Image"), this,
                                           [this] { ViewExport::copyToClipboard(currentView()); });
    copyCurrent->setObjectName(QStringLiteral("actionCopyCurrentView"));
    copyCurrent->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    menu->addSeparator();
    for (ExplorerView* v : m_views) {
        QMenu* sub = menu->addMenu(v->viewTitle());
        QAction* save = sub->addAction(tr("Save as PNG, SVG or PDF\u2026"), this, [this, v] { exportView(v); });
        save->setObjectName(QStringLiteral("actionExport_") + v->viewId());
        QAction* copy = sub->addAction(tr("Copy as Image"), this, [v] { ViewExport::copyToClipboard(v); });
        copy->setObjectName(QStringLiteral("actionCopy_") + v->viewId());
    }
}

void Explorer::addPostmortemAction(QMenu* menu)
{
    QAction* action = menu->addAction(tr("Export &Postmortem\u2026"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(m_window, tr("Folder for the postmortem report"));
        if (dir.isEmpty())
            return;
        QString error;
        if (writePostmortem(*this, dir, &error))
            announcePostmortem(dir);
        else
            QMessageBox::warning(m_window, tr("Export failed"), error);
    });
    action->setObjectName(QStringLiteral("actionExportPostmortem"));
    action->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    action->setEnabled(false);
    connect(this, &Explorer::dataAvailable, action, [action](const ExplorerDataPtr& d) { action->setEnabled(d != nullptr); });
    connect(m_analysis, &AnalysisController::analysisStarted, action, [action] { action->setEnabled(false); });
}

void Explorer::announcePostmortem(const QString& directory)
{
    const QString report = QDir(directory).filePath(QStringLiteral("report.md"));
    m_window->statusBar()->showMessage(tr("Postmortem written to %1").arg(QDir::toNativeSeparators(report)), 8000);
    auto* box = new QMessageBox(QMessageBox::Information, tr("Postmortem written"),
                                tr("The report and its images are in %1.").arg(QDir::toNativeSeparators(directory)),
                                QMessageBox::Close, m_window);
    box->setObjectName(QStringLiteral("postmortemWrittenBox"));
    box->setInformativeText(tr("report.md, timeline.png, breakdown_at_peak.png, stacks_at_peak.png, diagnosis.png, "
                               "whatif.png"));
    QPushButton* open = box->addButton(tr("Open Folder"), QMessageBox::ActionRole);
    open->setObjectName(QStringLiteral("openPostmortemFolder"));
    connect(open, &QPushButton::clicked, box,
            [directory] { QDesktopServices::openUrl(QUrl::fromLocalFile(directory)); });
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // window-modal, not blocking
}

void Explorer::exportView(ExplorerView* view)
{
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Export %1").arg(view->viewTitle()),
                                                      view->viewId() + QStringLiteral(".png"), ViewExport::fileFilter());
    if (path.isEmpty())
        return;
    QString error;
    if (!ViewExport::save(view, path, &error))
        QMessageBox::warning(m_window, tr("Export failed"), error);
}

void Explorer::setDocksHidden(bool hidden)
{
    if (hidden == m_docksHidden)
        return;
    m_docksHidden = hidden;
    if (hidden) {
        m_layoutBeforeHiding = m_window->saveState(kLayoutVersion);
        for (QDockWidget* d : m_docks)
            d->hide();
    } else {
        m_window->restoreState(m_layoutBeforeHiding, kLayoutVersion);
        m_layoutBeforeHiding.clear();
    }
}

ExplorerView* Explorer::currentView() const
{
    for (QWidget* w = QApplication::focusWidget(); w; w = w->parentWidget())
        for (size_t i = 0; i < m_docks.size(); ++i)
            if (w == m_docks[i])
                return m_views[i];
    return m_timeline;
}

void Explorer::saveLayout() const
{
    QSettings settings;
    settings.setValue(kLayoutKey, m_docksHidden ? m_layoutBeforeHiding : m_window->saveState(kLayoutVersion));
    settings.setValue(kLayoutVersionKey, kLayoutVersion);
}

void Explorer::restoreLayout()
{
    const QSettings settings;
    if (settings.value(kLayoutVersionKey).toInt() == kLayoutVersion)
        m_window->restoreState(settings.value(kLayoutKey).toByteArray(), kLayoutVersion);
}

void Explorer::resetLayout()
{
    m_window->restoreState(m_defaultLayout, kLayoutVersion);
    for (QDockWidget* d : m_docks)
        d->show();
}

} // namespace headroom
