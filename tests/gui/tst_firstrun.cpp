// SPDX-License-Identifier: MIT
// First run and everyday use (issue 10), offscreen: the start page, the Preferences
// dialog and settings that survive a restart of the application object, reloading a
// file that changes on disk, keyboard navigation, and the shortcut and about dialogs.
// Its own executable: one test restarts QApplication, so each test case makes its own.
#include <catch2/catch.hpp>

#include "core/util/units.h"
#include "ui/shell/aboutdialog.h"
#include "ui/shell/explorer.h"
#include "ui/shell/filechangewatcher.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"
#include "ui/shell/preferencesdialog.h"
#include "ui/shell/recentfiles.h"
#include "ui/shell/reloadbar.h"
#include "ui/shell/shortcutsdialog.h"
#include "ui/shell/startpage.h"
#include "ui/timeline/capturebar.h"
#include "ui/timeline/timelineview.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"

#include <qcustomplot.h>

#include <QAction>
#include <QClipboard>
#include <QPlainTextEdit>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QMenuBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolBar>
#include <QToolButton>
#include <QTest>

#include <map>
#include <set>

using namespace headroom;

namespace {

// Generous: under ASan with both cores busy a load takes many times its quiet time.
constexpr int kLoadTimeoutMs = 90000;

QString sample(const char* name)
{
    return QStringLiteral(HEADROOM_SAMPLE_DIR "/") + QLatin1String(name);
}

/// One application object, as the program makes it; settings in a throwaway place.
struct App {
    int argc = 1;
    char name[16] = "tst_firstrun";
    char* argv[2] = {name, nullptr};
    QApplication app{argc, argv};
    App()
    {
        QStandardPaths::setTestModeEnabled(true);
        QApplication::setOrganizationName(QStringLiteral("HeadroomTests"));
        // Its own settings file per process: ctest runs the cases side by side.
        QApplication::setApplicationName(qEnvironmentVariable("HEADROOM_SETTINGS_NAME", QStringLiteral("tst_firstrun")));
    }
};

void clearSettings()
{
    QSettings().clear();
    QSettings().sync();
    setByteUnits(ByteUnits::Binary);
}

/// True once `spy` has recorded at least `count` signals. QSignalSpy::wait() alone returns
/// false for a signal that came before it began waiting, so every wait here counts instead.
bool waitForCount(QSignalSpy& spy, int count, int timeoutMs = kLoadTimeoutMs)
{
    return spy.count() >= count || QTest::qWaitFor([&] { return spy.count() >= count; }, timeoutMs);
}

bool openAndWait(MainWindow& w, const QString& path)
{
    QSignalSpy loaded(w.loadController(), &LoadController::traceLoaded);
    w.openFile(path);
    return waitForCount(loaded, 1);
}

template <typename T>
T* waitForDialog(QWidget* parent)
{
    T* d = nullptr;
    (void)QTest::qWaitFor([&] { return (d = parent->findChild<T*>()) != nullptr && d->isVisible(); }, kLoadTimeoutMs);
    REQUIRE(d);
    return d;
}

/// HEADROOM_FIRSTRUN_SCREENSHOTS=DIR saves what the tests show, to look at.
void screenshot(QWidget* w, const char* name)
{
    const QByteArray dir = qgetenv("HEADROOM_FIRSTRUN_SCREENSHOTS");
    if (dir.isEmpty())
        return;
    QApplication::processEvents();
    w->grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name) + QStringLiteral(".png"));
}

QAction* action(MainWindow& w, const char* name)
{
    return w.findChild<QAction*>(QLatin1String(name));
}

} // namespace

TEST_CASE("start page: shown without a file, opens an example, lists it as recent with its peak", "[firstrun][startpage]")
{
    App app;
    clearSettings();
    MainWindow w;
    w.resize(1200, 700);
    w.show();
    REQUIRE(w.startPageShown());
    screenshot(&w, "startpage-empty");
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
        CHECK_FALSE(d->isVisible());
    QToolBar* deviceBar = w.findChild<QToolBar*>(QStringLiteral("deviceToolBar"));
    REQUIRE(deviceBar);
    CHECK_FALSE(deviceBar->isVisible()); // Zoom to Fit has nothing to zoom on the start page
    StartPage* page = w.startPage();
    REQUIRE(page->exampleList()->count() == 2);
    CHECK(page->recentList()->item(0)->flags() == Qt::NoItemFlags); // the "files appear here" line
    CHECK(page->findChild<QPlainTextEdit*>()->toPlainText().contains(QStringLiteral("_dump_snapshot")));
    page->findChild<QPushButton*>(QStringLiteral("startCopySnippet"))->click();
    CHECK(QApplication::clipboard()->text() == StartPage::recordingSnippet());

    // A file that cannot be read: the error is reported and the start page comes back.
    {
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("not a snapshot.pickle"));
        QFile f(bad);
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.write("this is not a pickle");
        f.close();
        QSignalSpy failed(w.loadController(), &LoadController::loadFailed);
        w.openFile(bad);
        REQUIRE(waitForCount(failed, 1));
        CHECK(w.startPageShown());
        for (QMessageBox* box : w.findChildren<QMessageBox*>())
            box->close();
        // The error box was window-modal: wait until it is gone and the page laid out
        // again, or the click below would be swallowed.
        REQUIRE(QTest::qWaitFor([] { return QApplication::activeModalWidget() == nullptr; }, kLoadTimeoutMs));
        QTest::qWait(50);
    }

    // Click the silmont example.
    QListWidgetItem* example = nullptr;
    for (int i = 0; i < page->exampleList()->count(); ++i)
        if (page->exampleList()->item(i)->text().startsWith(QStringLiteral("pt27_silmont")))
            example = page->exampleList()->item(i);
    REQUIRE(example);
    QSignalSpy loaded(w.loadController(), &LoadController::traceLoaded);
    QSignalSpy started(w.loadController(), &LoadController::loadStarted);
    page->exampleList()->scrollToItem(example);
    const QRect r = page->exampleList()->visualItemRect(example);
    REQUIRE(r.isValid());
    QTest::mouseClick(page->exampleList()->viewport(), Qt::LeftButton, {}, r.center());
    REQUIRE(started.count() == 1); // the click asked for it at once
    REQUIRE(waitForCount(loaded, 1));
    CHECK_FALSE(w.startPageShown());
    CHECK(w.explorer()->dock(QStringLiteral("timeline"))->isVisible());
    CHECK(w.explorer()->dock(QStringLiteral("timeline"))->isVisibleTo(&w));
    CHECK(deviceBar->isVisible());
    // The recent list has it, with its peak.
    REQUIRE(page->recentList()->count() == 1);
    const QString recent = page->recentList()->item(0)->text();
    CHECK(recent.startsWith(QStringLiteral("pt27_silmont_mem_snapshot.pickle")));
    CHECK(recent.contains(QStringLiteral("peak ")));
    CHECK(recent.contains(QStringLiteral("opened ")));
    w.close();
    MainWindow again; // the next start: the page lists it
    again.resize(1200, 700);
    again.show();
    screenshot(&again, "startpage");
}

TEST_CASE("preferences: edited in the dialog, they survive a restart of the application", "[firstrun][preferences]")
{
    {
        App app;
        clearSettings();
        MainWindow w;
        w.show();
        REQUIRE(openAndWait(w, sample("pt27_silmont_mem_snapshot.pickle")));
        action(w, "actionPreferences")->trigger();
        auto* dialog = waitForDialog<PreferencesDialog>(&w);
        auto* ok = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        dialog->findChild<QComboBox*>(QStringLiteral("unitsCombo"))->setCurrentIndex(1);
        dialog->findChild<QComboBox*>(QStringLiteral("themeCombo"))->setCurrentIndex(2);
        auto* capacity = dialog->findChild<QComboBox*>(QStringLiteral("capacityCombo"));
        capacity->setCurrentText(QStringLiteral("eighty"));
        CHECK_FALSE(ok->isEnabled()); // not a size: refused with a message
        CHECK(dialog->findChild<QLabel*>(QStringLiteral("capacityError"))->isVisibleTo(dialog));
        capacity->setCurrentText(QStringLiteral("80 GiB"));
        CHECK(ok->isEnabled());
        dialog->findChild<QCheckBox*>(QStringLiteral("autoReloadCheck"))->setChecked(true);
        screenshot(dialog, "preferences");
        ok->click();
        CHECK(w.preferences().units == ByteUnits::Decimal);
        CHECK(formatBytes(int64_t(80) << 30) == "85.90 GB");
        CHECK(QApplication::palette().color(QPalette::Window).lightness() < 100); // dark
        // The analysis runs again with the default capacity (the file has no OOM record).
        CHECK(QTest::qWaitFor([&] { return w.explorer()->data() && w.explorer()->data()->capacity.bytes == (int64_t(80) << 30); },
                              kLoadTimeoutMs));
        // The what-if projections follow the units too (they stayed in GiB before). The
        // views get the new analysis one per event-loop pass, the what-if panel among the
        // last: wait until its report has the projected peak.
        const QRegularExpression projected(QStringLiteral("Projected peak \\*\\*[0-9.]+ (GB|MB)\\*\\*"));
        QString whatIf;
        const bool decimal = QTest::qWaitFor([&] {
            whatIf = w.explorer()->whatIf()->panel()->markdown();
            return projected.match(whatIf).hasMatch();
        }, kLoadTimeoutMs);
        INFO(whatIf.toStdString());
        CHECK(decimal);
        w.close();
    }
    setByteUnits(ByteUnits::Binary); // what a new process starts with
    {
        App app; // the restart
        const Preferences p = Preferences::load();
        CHECK(p.units == ByteUnits::Decimal);
        CHECK(p.theme == Theme::Dark);
        CHECK(p.defaultCapacity == (int64_t(80) << 30));
        CHECK(p.autoReload);
        p.apply();
        MainWindow w;
        CHECK(w.preferences() == p);
        // The recent file and its peak are still there, written in the chosen units.
        REQUIRE(w.startPage()->recentList()->count() == 1);
        const QString recent = w.startPage()->recentList()->item(0)->text();
        CHECK(recent.contains(QStringLiteral("peak ")));
        CHECK_FALSE(recent.contains(QStringLiteral("iB"))); // decimal units
        // The dialog opens on the saved values; Restore Defaults brings the defaults back.
        action(w, "actionPreferences")->trigger();
        auto* dialog = waitForDialog<PreferencesDialog>(&w);
        CHECK(dialog->preferences() == p);
        dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::RestoreDefaults)->click();
        CHECK(dialog->preferences() == Preferences{});
        dialog->reject();
        clearSettings();
    }
}

TEST_CASE("the capture bar says what the file cannot show, with the fixes, and goes away when closed",
          "[firstrun][capture]")
{
    App app;
    clearSettings();
    MainWindow w;
    w.resize(1400, 800);
    w.show();
    // A PyTorch 2.0 snapshot with one trace entry: no history, so no phases and no births.
    const QString path = QStringLiteral(HEADROOM_REAL_TRACES_DIR "/pt20_yiyi_oom_snapshot.pickle");
    CaptureBar* bar = w.explorer()->captureBar();
    QSignalSpy ready(bar, &CaptureBar::findingsReady);
    REQUIRE(openAndWait(w, path));
    REQUIRE(waitForCount(ready, 1));
    CHECK(ready.front().front().toBool());
    REQUIRE(QTest::qWaitFor([&] { return bar->isVisible(); }, kLoadTimeoutMs));

    // The same findings as `headroom-cli doctor`, warnings first.
    const auto expected = CaptureDoctor::examine(*w.trace());
    REQUIRE(bar->findings().size() == expected.size());
    REQUIRE_FALSE(expected.empty());
    CHECK(expected.front().severity == CaptureFinding::Severity::Warning);
    auto* summary = bar->findChild<QLabel*>(QStringLiteral("captureBarSummary"));
    auto* details = bar->findChild<QLabel*>(QStringLiteral("captureBarDetails"));
    auto* title = bar->findChild<QLabel*>(QStringLiteral("captureBarTitle"));
    CHECK(title->text().contains(QStringLiteral("cannot show")));
    // One line, elided to the bar; the tool tip has the whole first warning.
    CHECK(summary->toolTip().startsWith(QString::fromStdString(expected.front().message)));
    CHECK(bar->height() < 3 * summary->fontMetrics().height() + 16);
    CHECK_FALSE(details->isVisible());

    // Details: every finding with its fix, selectable to paste into the training script.
    bar->findChild<QToolButton*>(QStringLiteral("captureBarDetailsButton"))->click();
    CHECK(bar->detailsShown());
    CHECK(details->isVisible());
    for (const CaptureFinding& f : expected)
        CHECK(details->text().contains(QString::fromStdString(f.fix).toHtmlEscaped()));
    // The bar sits above the timeline, not over it.
    const QWidget* timeline = w.timelineView();
    CHECK(bar->mapTo(&w, QPoint(0, bar->height())).y() <= timeline->mapTo(&w, QPoint(0, 0)).y());
    screenshot(&w, "capturebar");
    CHECK(w.size() == QSize(1400, 800)); // the details scroll; the window does not grow

    bar->findChild<QToolButton*>(QStringLiteral("captureBarClose"))->click();
    CHECK_FALSE(bar->isVisible());

    // The next file is examined afresh: the bar comes back exactly when it has findings.
    REQUIRE(openAndWait(w, sample("pt27_silmont_mem_snapshot.pickle")));
    REQUIRE(waitForCount(ready, 2));
    CHECK(bar->isVisible() == ready.back().front().toBool());
    clearSettings();
}

TEST_CASE("a file that changes on disk: the bar offers to reload, then it reloads by itself", "[firstrun][reload]")
{
    App app;
    clearSettings();
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rank0 snapshot \u00E9.pickle"));
    REQUIRE(QFile::copy(sample("pt27_silmont_mem_snapshot.pickle"), path));
    MainWindow w;
    w.show();
    w.fileWatcher()->setSettleMs(100);
    REQUIRE(openAndWait(w, path));
    CHECK_FALSE(w.reloadBar()->isVisible());

    // The training job writes a new snapshot (another file's bytes, written in two goes).
    QFile other(sample("pt27_kk_memory_ctx128_fullstep.pickle.gz"));
    REQUIRE(other.open(QIODevice::ReadOnly));
    const QByteArray bytes = other.readAll();
    {
        QFile out(path);
        REQUIRE(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(bytes.left(bytes.size() / 2));
        out.flush();
        QTest::qWait(30);
        out.write(bytes.mid(bytes.size() / 2));
    }
    REQUIRE(QTest::qWaitFor([&] { return w.reloadBar()->isVisible(); }, kLoadTimeoutMs));
    screenshot(&w, "reloadbar");
    QSignalSpy loaded(w.loadController(), &LoadController::traceLoaded);
    w.reloadBar()->findChild<QPushButton*>(QStringLiteral("reloadBarReload"))->click();
    REQUIRE(waitForCount(loaded, 1));
    CHECK(w.trace()->snapshot.devices.front().trace.count() > 10000); // the kk file's events
    CHECK_FALSE(w.reloadBar()->isVisible());

    // "Always reload": the next change reloads without asking.
    Preferences p = w.preferences();
    p.autoReload = true;
    w.setPreferences(p);
    REQUIRE(QFile::remove(path));
    REQUIRE(QFile::copy(sample("pt27_silmont_mem_snapshot.pickle"), path)); // delete + write again
    REQUIRE(waitForCount(loaded, 2));
    CHECK(w.trace()->snapshot.devices.front().trace.count() < 10000);
    CHECK_FALSE(w.reloadBar()->isVisible());
    clearSettings();
}

TEST_CASE("keyboard: navigation steps the selection, shortcuts are unique and listed", "[firstrun][keyboard]")
{
    App app;
    clearSettings();
    MainWindow w;
    w.show();
    REQUIRE(openAndWait(w, sample("pt27_silmont_mem_snapshot.pickle")));
    Selection* sel = w.explorer()->selection();
    const int64_t peak = w.timelineView()->peakEvent();
    REQUIRE(peak > 0);
    CHECK(sel->state().event == peak);
    action(w, "actionNextEvent")->trigger();
    CHECK(sel->state().event == peak + 1);
    action(w, "actionPreviousEvent")->trigger();
    action(w, "actionPreviousEvent")->trigger();
    CHECK(sel->state().event == peak - 1);
    action(w, "actionGoToPeak")->trigger();
    CHECK(sel->state().event == peak);
    // Zoom to a selected range: the visible x range shrinks to it.
    sel->setRange(10, 20);
    const double before = w.timelineView()->plot()->xAxis->range().size();
    action(w, "actionZoomToSelection")->trigger();
    CHECK(w.timelineView()->plot()->xAxis->range().size() < before / 4);
    action(w, "actionShowView_diagnosis")->trigger();
    CHECK(w.explorer()->dock(QStringLiteral("diagnosis"))->isVisible());

    // No two actions share a key.
    std::set<QAction*> actions;
    for (const QMenu* m : w.findChildren<QMenu*>())
        for (QAction* a : m->actions())
            actions.insert(a);
    std::map<QString, QString> owners;
    for (QAction* a : actions)
        for (const QKeySequence& k : a->shortcuts()) {
            const QString key = k.toString();
            const auto it = owners.find(key);
            INFO(key.toStdString() << ": " << a->text().toStdString() << " and "
                                   << (it == owners.end() ? std::string() : it->second.toStdString()));
            CHECK(it == owners.end());
            owners[key] = a->text();
        }
    for (const char* frequent : {"Ctrl+O", "F5", "Alt+Right", "Alt+Left", "Ctrl+0", "Ctrl+Shift+F", "Ctrl+E", "Alt+1", "F1"})
        CHECK(owners.count(QString::fromLatin1(frequent)) == 1);

    // Help ▸ Keyboard Shortcuts lists them, and the filter narrows the list.
    action(w, "actionShortcuts")->trigger();
    auto* dialog = waitForDialog<ShortcutsDialog>(&w);
    QTableWidget* table = dialog->table();
    QStringList texts;
    for (int r = 0; r < table->rowCount(); ++r)
        texts << table->item(r, 0)->text() + QLatin1Char('|') + table->item(r, 1)->text();
    CHECK(texts.contains(QStringLiteral("Next Event|Alt+Right")));
    CHECK(texts.contains(QStringLiteral("Open|Ctrl+O")));
    CHECK(texts.contains(QStringLiteral("Zoom to Fit|Ctrl+0")));
    dialog->findChild<QLineEdit*>(QStringLiteral("shortcutsFilter"))->setText(QStringLiteral("peak"));
    int shown = 0;
    for (int r = 0; r < table->rowCount(); ++r)
        shown += table->isRowHidden(r) ? 0 : 1;
    CHECK(shown >= 1);
    CHECK(shown < 4);
    dialog->findChild<QLineEdit*>(QStringLiteral("shortcutsFilter"))->clear();
    screenshot(dialog, "shortcuts");
    dialog->reject();

    action(w, "actionAbout")->trigger();
    auto* about = waitForDialog<AboutDialog>(&w);
    screenshot(about, "about");
    CHECK(AboutDialog::librariesHtml().contains(QStringLiteral("QCustomPlot")));
    CHECK(AboutDialog::librariesHtml().contains(QStringLiteral("GPL-3.0")));
    CHECK(AboutDialog::librariesHtml().contains(QStringLiteral("Zstandard")));
    about->reject();
    clearSettings();
}
