// SPDX-License-Identifier: MIT
#include "ui/shell/mainwindow.h"

#include "core/analysis/summary.h"
#include "core/io/loader.h"
#include "core/native/nativeformat.h"
#include "ui/explorer/analysiscontroller.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/explorer/logging.h"
#include "ui/plot/categorystyle.h"
#include "ui/shell/aboutdialog.h"
#include "ui/shell/explorer.h"
#include "ui/shell/filechangewatcher.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/navigationactions.h"
#include "ui/shell/postmortem.h"
#include "ui/shell/preferencesdialog.h"
#include "ui/shell/recentfiles.h"
#include "ui/shell/reloadbar.h"
#include "ui/shell/shortcutsdialog.h"
#include "ui/shell/startpage.h"
#include "ui/shell/usercategoriesdialog.h"
#include "ui/shell/usercategorystore.h"
#include "ui/views/breakdownview.h"
#include "ui/timeline/timelineview.h"

#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QToolBar>

namespace headroom {

namespace {

QString count(size_t n, const QString& one, const QString& many)
{
    return QLocale().toString(static_cast<qulonglong>(n)) + QLatin1Char(' ') + (n == 1 ? one : many);
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_loader(new LoadController(this))
    , m_explorer(new Explorer(this))
    , m_deviceCombo(new QComboBox(this))
    , m_summary(new QLabel(this))
    , m_progress(new QProgressBar(this))
    , m_cancelButton(new QPushButton(tr("Cancel"), this))
    , m_saveJob(new BackgroundJob(this))
    , m_saveProgress(new QProgressBar(this))
{
    setWindowTitle(tr("Headroom"));
    setAcceptDrops(true);
    m_prefs = Preferences::load();
    m_explorer->analysis()->setDefaultCapacity(m_prefs.defaultCapacity);
    createActions();
    m_explorer->restoreLayout();
    applyUserCategories(UserCategoryStore::rulesFor(QString()));
    m_startPage = new StartPage(m_recent, this);
    connect(m_startPage, &StartPage::openRequested, this, &MainWindow::showOpenDialog);
    connect(m_startPage, &StartPage::fileRequested, this, &MainWindow::openFile);
    setStartPageShown(true);

    m_watcher = new FileChangeWatcher(this);
    connect(m_watcher, &FileChangeWatcher::changed, this, &MainWindow::fileChangedOnDisk);
    m_reloadBar = new ReloadBar(this);
    m_reloadToolBar = new QToolBar(tr("File Changed"), this);
    m_reloadToolBar->setObjectName(QStringLiteral("reloadToolBar"));
    m_reloadToolBar->setMovable(false);
    m_reloadToolBar->setFloatable(false);
    m_reloadToolBar->toggleViewAction()->setVisible(false);
    m_reloadToolBar->addWidget(m_reloadBar);
    addToolBarBreak(Qt::TopToolBarArea);
    addToolBar(Qt::TopToolBarArea, m_reloadToolBar);
    m_reloadToolBar->hide();
    connect(m_reloadBar, &ReloadBar::dismissed, m_reloadToolBar, &QWidget::hide);
    connect(m_reloadBar, &ReloadBar::reloadRequested, this, &MainWindow::reload);
    connect(m_reloadBar, &ReloadBar::alwaysReloadRequested, this, [this] {
        Preferences p = m_prefs;
        p.autoReload = true;
        setPreferences(p);
        reload();
    });
    connect(m_explorer, &Explorer::traceRequested, this,
            [this](const QString& path, std::shared_ptr<const LoadedTrace> trace, int device) {
                if (trace != m_trace)
                    setTrace(path, std::move(trace));
                selectDevice(device);
            });
    restoreGeometry(QSettings().value(QStringLiteral("window/geometry")).toByteArray());

    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    statusBar()->addWidget(m_summary, 1);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p%"));
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancelButton);
    m_saveProgress->setObjectName(QStringLiteral("saveProgress"));
    m_saveProgress->setRange(0, 0);
    m_saveProgress->setMaximumWidth(120);
    m_saveProgress->setToolTip(tr("Saving"));
    m_saveProgress->hide();
    statusBar()->addPermanentWidget(m_saveProgress);
    setLoading(false);
    updateSummary();

    connect(m_cancelButton, &QPushButton::clicked, m_loader, &LoadController::cancel);
    connect(m_loader, &LoadController::loadStarted, this, [this](const QString& path) {
        setLoading(true);
        statusBar()->showMessage(tr("Loading %1\u2026").arg(QFileInfo(path).fileName()));
        // The panels come back while the file loads, empty, on the next turn of the event
        // loop: laying them out and painting them is a turn of its own, neither the one
        // that starts the load nor the one that shows the loaded file.
        QMetaObject::invokeMethod(this, [this] {
            if (m_loader->isLoading())
                setStartPageShown(false);
        }, Qt::QueuedConnection);
    });
    connect(m_loader, &LoadController::progressChanged, m_progress, &QProgressBar::setValue);
    connect(m_loader, &LoadController::curvesPrepared, m_explorer->timeline(), &TimelineView::adoptPreparedCurves);
    connect(m_loader, &LoadController::traceLoaded, this, &MainWindow::setTrace);
    connect(m_loader, &LoadController::loadFailed, this, &MainWindow::showLoadError);
    connect(m_loader, &LoadController::loadCancelled, this, [this] {
        setLoading(false);
        if (!m_trace)
            setStartPageShown(true);
        statusBar()->showMessage(tr("Loading cancelled"), 4000);
    });
    connect(m_deviceCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, &MainWindow::showDevice);
}

MainWindow::~MainWindow() = default;

TimelineView* MainWindow::timelineView() const
{
    return m_explorer->timeline();
}

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open\u2026"), this, &MainWindow::showOpenDialog);
    open->setShortcut(QKeySequence::Open);
    m_recent = new RecentFiles(file->addMenu(tr("Open &Recent")), this);
    connect(m_recent, &RecentFiles::fileRequested, this, &MainWindow::openFile);
    m_reloadAction = file->addAction(tr("&Reload"), this, &MainWindow::reload);
    m_reloadAction->setShortcut(QKeySequence::Refresh);
    m_reloadAction->setEnabled(false);
    m_saveAsAction = file->addAction(tr("Save &As\u2026"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save as Headroom Trace"),
                                                          QFileInfo(m_path).completeBaseName() + QStringLiteral(".hrt"),
                                                          tr("Headroom traces (*.hrt)"));
        if (!path.isEmpty())
            saveAs(path);
    });
    m_saveAsAction->setShortcut(QKeySequence::SaveAs);
    m_saveAsAction->setEnabled(false);
    file->addSeparator();
    m_explorer->populateExportMenu(file->addMenu(tr("&Export View")));
    m_explorer->addPostmortemAction(file);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    m_explorer->populateViewMenu(menuBar()->addMenu(tr("&View")));
    m_navigation = new NavigationActions(m_explorer, menuBar()->addMenu(tr("&Go")), this);
    QMenu* settings = menuBar()->addMenu(tr("&Settings"));
    QAction* prefs = settings->addAction(tr("&Preferences…"), this, &MainWindow::showPreferences);
    prefs->setObjectName(QStringLiteral("actionPreferences"));
    prefs->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    prefs->setMenuRole(QAction::PreferencesRole);
    QAction* cats = settings->addAction(tr("Your &Categories\u2026"), this, &MainWindow::showUserCategories);
    cats->setObjectName(QStringLiteral("actionUserCategories"));
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* keys = help->addAction(tr("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    keys->setObjectName(QStringLiteral("actionShortcuts"));
    keys->setShortcut(QKeySequence(Qt::Key_F1));
    help->addSeparator();
    QAction* about = help->addAction(tr("&About Headroom"), this, &MainWindow::showAbout);
    about->setObjectName(QStringLiteral("actionAbout"));
    about->setMenuRole(QAction::AboutRole);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt)->setMenuRole(QAction::AboutQtRole);
    QToolBar* bar = addToolBar(tr("Device"));
    m_deviceToolBar = bar;
    bar->setObjectName(QStringLiteral("deviceToolBar"));
    bar->setMovable(false);
    bar->addAction(m_explorer->zoomToFitAction());
    bar->addSeparator();
    m_deviceCombo->setObjectName(QStringLiteral("deviceCombo"));
    m_deviceCombo->setToolTip(tr("The device whose memory is shown"));
    m_deviceCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_deviceComboAction = bar->addWidget(m_deviceCombo);
    m_deviceComboAction->setVisible(false);
}

void MainWindow::openFile(const QString& path)
{
    m_loader->load(path);
}

void MainWindow::reload()
{
    if (m_path.isEmpty())
        return;
    // Come back to the device on screen (a per-rank file keeps its ordinal).
    const int index = m_deviceCombo->currentIndex();
    if (m_trace && index >= 0 && index < int(m_trace->snapshot.devices.size())) {
        const int ordinal = m_trace->snapshot.devices[size_t(index)].device;
        connect(m_loader, &LoadController::traceLoaded, this, [this, ordinal] { selectDevice(ordinal); },
                Qt::SingleShotConnection);
    }
    m_reloadToolBar->hide();
    openFile(m_path);
}

bool MainWindow::startPageShown() const
{
    return centralWidget() == m_startPage && m_startPage->isVisible();
}

void MainWindow::setStartPageShown(bool shown)
{
    if (shown == (centralWidget() == m_startPage))
        return;
    if (shown) {
        setCentralWidget(m_startPage);
        m_startPage->show();
    } else {
        takeCentralWidget(); // keeps the page for later
        m_startPage->hide();
    }
    m_explorer->setDocksHidden(shown);
    m_deviceToolBar->setVisible(!shown);
}

void MainWindow::fileChangedOnDisk(const QString& path)
{
    if (path != QFileInfo(m_path).absoluteFilePath())
        return;
    if (m_prefs.autoReload) {
        statusBar()->showMessage(tr("%1 changed on disk: reloading").arg(QFileInfo(path).fileName()), 4000);
        reload();
        return;
    }
    m_reloadBar->showFor(path);
    m_reloadToolBar->show();
}

void MainWindow::setPreferences(const Preferences& prefs)
{
    const Preferences before = m_prefs;
    m_prefs = prefs;
    m_prefs.save();
    m_prefs.apply();
    m_explorer->analysis()->setDefaultCapacity(m_prefs.defaultCapacity);
    // Sizes are written when the views take their data: show the device again (its
    // analysis runs once more, in the background) when units or capacity changed.
    if (m_trace && (before.units != m_prefs.units || before.defaultCapacity != m_prefs.defaultCapacity))
        showDevice(m_deviceCombo->currentIndex());
    updateSummary();
}

void MainWindow::showPreferences()
{
    auto* dialog = new PreferencesDialog(m_prefs, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] { setPreferences(dialog->preferences()); });
    dialog->open();
}

void MainWindow::showUserCategories()
{
    const QString path = m_trace ? m_path : QString();
    auto* dialog = new UserCategoriesDialog(UserCategoryStore::rulesFor(path), m_explorer->data(), this,
                                            UserCategoryStore::hasFileRules(path));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog, path] {
        // Remembered for this file or as the default (headroom-cli takes the same text as --categories).
        UserCategoryStore::save(path, dialog->rulesText(), dialog->forThisFileOnly());
        m_explorer->breakdown()->setUserCategories(dialog->rules());
    });
    dialog->open();
}

bool MainWindow::applyUserCategories(const QString& rulesText)
{
    if (rulesText.trimmed().isEmpty()) {
        m_explorer->breakdown()->setUserCategories(nullptr);
        return true;
    }
    try {
        m_explorer->breakdown()->setUserCategories(
            std::make_shared<UserCategories>(UserCategories::parse(rulesText.toStdString(), "the saved categories")));
        return true;
    } catch (const UserCategoriesError& e) {
        statusBar()->showMessage(tr("Your categories are not used: %1").arg(QString::fromStdString(e.what())), 15000);
        return false;
    }
}

void MainWindow::showShortcuts()
{
    auto* dialog = new ShortcutsDialog(menuBar(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
}

void MainWindow::showAbout()
{
    auto* dialog = new AboutDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
}

bool MainWindow::selectDevice(int ordinal)
{
    if (!m_trace)
        return false;
    const auto& devices = m_trace->snapshot.devices;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].device == ordinal) {
            m_deviceCombo->setCurrentIndex(static_cast<int>(i)); // emits, shows it
            return true;
        }
    }
    return false;
}

int MainWindow::currentDevice() const
{
    return m_trace ? m_deviceCombo->currentIndex() : -1;
}

void MainWindow::showOpenDialog()
{
    const QString dir = m_path.isEmpty() ? QString() : QFileInfo(m_path).absolutePath();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open Memory Snapshot"), dir,
        tr("Memory snapshots (*.pickle *.pkl *.pickle.gz *.gz *.html);;All files (*)"));
    if (!path.isEmpty())
        openFile(path);
}

void MainWindow::setTrace(const QString& path, std::shared_ptr<const LoadedTrace> trace)
{
    setLoading(false);
    statusBar()->clearMessage();
    m_trace = std::move(trace);
    const bool otherFile = QFileInfo(path).absoluteFilePath() != QFileInfo(m_path).absoluteFilePath();
    m_path = path;
    if (otherFile) // a file's own rules, or the default again
        applyUserCategories(UserCategoryStore::rulesFor(path));
    int64_t peak = 0;
    for (const MemoryTimeline& tl : m_trace->timelines)
        peak = std::max(peak, tl.peakAllocated);
    m_recent->add(path, peak);
    m_watcher->watch(path);
    m_reloadToolBar->hide();
    setStartPageShown(false); // already hidden when the load started; this covers a rank picked in Ranks
    m_reloadAction->setEnabled(true);
    m_saveAsAction->setEnabled(!m_saveJob->isRunning());
    setWindowTitle(tr("%1 \u2014 Headroom").arg(QFileInfo(path).fileName()));
    setWindowFilePath(path);

    const QSignalBlocker blocker(m_deviceCombo);
    m_deviceCombo->clear();
    for (const DeviceData& dev : m_trace->snapshot.devices)
        m_deviceCombo->addItem(tr("Device %1 (%2)").arg(dev.device).arg(count(dev.trace.count(), tr("trace entry"), tr("trace entries"))));
    m_deviceComboAction->setVisible(m_trace->snapshot.devices.size() > 1);
    const int device = primaryDeviceIndex(*m_trace);
    m_deviceCombo->setCurrentIndex(device);
    showDevice(device);
}

void MainWindow::showDevice(int index)
{
    if (!m_trace)
        return;
    QElapsedTimer t;
    t.start();
    m_explorer->showDevice(m_trace, index);
    qCInfo(lcTiming, "showDevice: %.1f ms", double(t.nsecsElapsed()) / 1e6);
    updateSummary();
}

void MainWindow::showLoadError(const QString& path, const QString& message)
{
    setLoading(false);
    if (!m_trace)
        setStartPageShown(true);
    statusBar()->showMessage(tr("Could not open %1").arg(QFileInfo(path).fileName()), 6000);
    // Window-modal but not blocking: the event loop (and tests) keep running.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Could not open file"),
                                tr("Headroom could not open this file:"), QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("loadErrorBox"));
    box->setInformativeText(message);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::setLoading(bool loading)
{
    m_progress->setVisible(loading);
    m_cancelButton->setVisible(loading);
    if (loading)
        m_progress->setValue(0);
}

void MainWindow::updateSummary()
{
    if (!m_trace) {
        m_summary->setText(tr("No file loaded. Open a snapshot with File \u25B8 Open or drop one here."));
        return;
    }
    const Snapshot& snap = m_trace->snapshot;
    QStringList parts;
    parts << QFileInfo(m_path).fileName() + QStringLiteral(" (") + formatBytesQ(static_cast<int64_t>(m_trace->fileBytes))
                 + QLatin1Char(')');
    parts << QString::fromStdString(snap.format);
    parts << count(snap.devices.size(), tr("device"), tr("devices"));
    const int index = m_deviceCombo->currentIndex();
    if (index >= 0 && index < static_cast<int>(snap.devices.size())) {
        const DeviceData& dev = snap.devices[size_t(index)];
        const MemoryTimeline& tl = m_trace->timelines[size_t(index)];
        QString peak = tr("device %1 peak %2").arg(dev.device).arg(formatBytesQ(tl.peakAllocated));
        if (tl.peakEventIndex >= 0)
            peak += tr(" at event %1").arg(tl.peakEventIndex);
        parts << peak;
        parts << count(dev.trace.count(), tr("trace entry"), tr("trace entries"));
        if (!dev.ooms.empty())
            parts << count(dev.ooms.size(), tr("OOM"), tr("OOMs"));
    }
    m_summary->setText(parts.join(QStringLiteral("  \u00B7  ")));
}

void MainWindow::saveAs(const QString& path)
{
    if (!m_trace || m_saveJob->isRunning())
        return; // the action is disabled then
    NativeFormat::WriteOptions options;
    options.userData = m_explorer->userData(m_trace->snapshot.userData); // what-if settings, read here
    m_saveJob->start(
        [trace = m_trace, file = path.toStdString(), options](BackgroundJob::Control&) {
            // The write does not check the flag: a save runs to its end (atomically) even
            // when the window closes.
            try {
                NativeFormat::write(trace->snapshot, file, options);
            } catch (const std::exception& e) {
                return QString::fromStdString(e.what());
            }
            return QString();
        },
        [this, path](const QString& error) { saveFinished(path, error); });
    m_saveAsAction->setEnabled(false);
    m_saveProgress->show();
    statusBar()->showMessage(tr("Saving %1\u2026").arg(QFileInfo(path).fileName()));
}

bool MainWindow::isSaving() const
{
    return m_saveJob->isRunning();
}

void MainWindow::saveFinished(const QString& path, const QString& error)
{
    m_saveProgress->hide();
    m_saveAsAction->setEnabled(bool(m_trace));
    const QString name = QFileInfo(path).fileName();
    if (error.isEmpty()) {
        statusBar()->showMessage(tr("Saved %1").arg(name), 4000);
        emit saved(path);
        return;
    }
    statusBar()->showMessage(tr("Could not save %1").arg(name), 6000);
    // Window-modal but not blocking, as the load error.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Save failed"),
                                tr("Headroom could not save %1.").arg(QDir::toNativeSeparators(path)), QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("saveErrorBox"));
    box->setInformativeText(error);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    emit saveFailed(path, error);
}

bool MainWindow::exportPostmortem(const QString& directory, QString* error)
{
    if (!writePostmortem(*m_explorer, directory, error))
        return false;
    m_explorer->announcePostmortem(directory);
    return true;
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings().setValue(QStringLiteral("window/geometry"), saveGeometry());
    m_explorer->saveLayout();
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.first().isLocalFile()) {
        openFile(urls.first().toLocalFile());
        event->acceptProposedAction();
    }
}

} // namespace headroom
