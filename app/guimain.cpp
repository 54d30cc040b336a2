// SPDX-License-Identifier: MIT
// headroom: the desktop memory-snapshot explorer.
//   headroom [FILE]
//   headroom --screenshot OUT.png [--view NAME] FILE   (renders offscreen, writes the image, exits)
#include "headroom_version.h" // HEADROOM_GIT_COMMIT, written at build time
#include "core/replay/allocatorreplay.h"
#include "core/util/units.h"
#include "ui/explorer/explorerdata.h"
#include "ui/explorer/analysiscontroller.h"
#include "ui/explorer/explorerview.h"
#include "ui/explorer/logging.h"
#include "ui/explorer/viewexport.h"
#include "ui/shell/explorer.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"
#include "ui/shell/memorytuning.h"
#include "ui/shell/preferences.h"
#include "ui/shell/theme.h"
#include "ui/timeline/timelineview.h"
#include "ui/whatif/projectedtimelinejob.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QIcon>
#include <QPixmap>
#include <QScreen>
#include <QTimer>

#include <cstdio>
#include <cstring>

namespace {

constexpr int kScreenshotWidth = 1400;
constexpr int kScreenshotHeight = 800;

/// The screenshot's stages in headroom.timing.
void stamp(const char* stage)
{
    qCInfo(headroom::lcTiming, "screenshot: %s at %.1f ms", stage, headroom::msSinceStart());
}

/// --screenshot, --version and --help must work on a headless machine: pick the
/// offscreen platform before QApplication exists when nothing else was asked for and
/// there is no display.
void preferOffscreenWhenHeadless(int argc, char** argv)
{
    bool headless = false;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (std::strncmp(a, "--screenshot", 12) == 0 || std::strcmp(a, "--version") == 0 || std::strcmp(a, "-v") == 0
            || std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0)
            headless = true;
    }
    if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY")
        && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
}

/// --alloc-conf: the timeline's simulated reserved curve under `conf` ("recorded": the file's
/// own setting), replayed here rather than in the background: nothing else is waiting.
bool overlaySimulatedReserved(headroom::MainWindow& window, const QString& conf)
{
    const headroom::ExplorerDataPtr data = window.explorer()->data();
    if (!data)
        return false;
    headroom::AllocatorReplayOptions options;
    options.keepCurve = true;
    QString label = QStringLiteral("recorded setting");
    if (conf != QLatin1String("recorded")) {
        std::string why;
        options.config = headroom::AllocatorConfig::parse(conf.toStdString(), &why);
        if (!options.config) {
            std::fprintf(stderr, "headroom: --alloc-conf: %s\n", why.c_str());
            return false;
        }
        label = conf;
    }
    headroom::AllocatorReplayResult r =
        headroom::replayAllocator(data->trace->snapshot, data->device(), data->timeline(), options);
    window.explorer()->timeline()->setSimulatedReserved(std::move(r.simulatedReserved),
                                                        QStringLiteral("reserved, simulated (%1)").arg(label));
    return true;
}

/// --whatif: the what-if panel's settings (its saved JSON, `{"whatif": {...}}`, or the inner
/// object alone), applied once it has calibrated; the projected run is then drawn on the
/// timeline before the screenshot is taken.
bool applyWhatIf(headroom::MainWindow& window, const QString& json)
{
    headroom::WhatIfPanel* panel = window.explorer()->whatIf()->panel();
    panel->finishCalibration();
    QString wrapped = json.trimmed();
    if (!wrapped.contains(QLatin1String("\"whatif\"")))
        wrapped = QStringLiteral("{\"whatif\": %1}").arg(wrapped);
    if (!panel->restoreSettings(wrapped)) {
        std::fprintf(stderr, "headroom: --whatif needs the what-if's settings as JSON, e.g. '{\"micro_batch\": 8}'\n");
        return false;
    }
    panel->finishCalibration();
    panel->projectedTimeline()->finishNow();
    return true;
}

int takeScreenshot(headroom::MainWindow& window, const QString& out, const QString& file, int device,
                   const QString& viewName, const QString& allocConf, const QString& whatIf)
{
    headroom::ExplorerView* view = nullptr;
    if (!viewName.isEmpty()) {
        view = window.explorer()->view(viewName);
        if (!view) {
            QStringList names;
            for (headroom::ExplorerView* v : window.explorer()->views())
                names << v->viewId();
            std::fprintf(stderr, "headroom: no view \"%s\"; the views are: %s\n", qPrintable(viewName),
                         qPrintable(names.join(QStringLiteral(", "))));
            return 2;
        }
    }
    QString error;
    bool ok = false;
    QEventLoop loop;
    headroom::LoadController* loader = window.loadController();
    QObject::connect(loader, &headroom::LoadController::traceLoaded, &loop, [&] {
        ok = true;
        loop.quit();
    });
    QObject::connect(loader, &headroom::LoadController::loadFailed, &loop,
                     [&](const QString&, const QString& message) {
                         error = message;
                         loop.quit();
                     });
    QObject::connect(loader, &headroom::LoadController::loadCancelled, &loop, [&] {
        error = QStringLiteral("load cancelled");
        loop.quit();
    });
    // The file is read on a worker thread while this one lays out and shows the window.
    window.openFile(file);
    window.resize(kScreenshotWidth, kScreenshotHeight);
    window.show();
    stamp("window shown");
    loop.exec();
    stamp("loaded");
    if (!ok) {
        std::fprintf(stderr, "headroom: %s\n", qPrintable(error));
        return 2;
    }
    if (device >= 0 && !window.selectDevice(device)) {
        std::fprintf(stderr, "headroom: %s has no device %d\n", qPrintable(file), device);
        return 2;
    }
    // The analysis fills in every view a moment after the load.
    if (!window.explorer()->dataDelivered()) { // the views take it one per event-loop turn
        QEventLoop analysed;
        QObject::connect(window.explorer(), &headroom::Explorer::dataAvailable, &analysed, &QEventLoop::quit);
        analysed.exec();
    }
    stamp("analysed");
    if (!allocConf.isEmpty() && !overlaySimulatedReserved(window, allocConf))
        return 2;
    if (!whatIf.isEmpty() && !applyWhatIf(window, whatIf))
        return 2;
    if (view)
        window.explorer()->showView(viewName);
    QApplication::processEvents(); // layout of the new data and the queued replot
    if (view) {
        QString error;
        if (!headroom::ViewExport::save(view, out, &error, QSize(kScreenshotWidth, kScreenshotHeight))) {
            std::fprintf(stderr, "headroom: %s\n", qPrintable(error));
            return 2;
        }
        return 0;
    }
    const QPixmap pixmap = window.grab();
    stamp("grabbed");
    if (!pixmap.save(out)) {
        std::fprintf(stderr, "headroom: cannot write %s\n", qPrintable(out));
        return 2;
    }
    stamp("written");
    return 0;
}

/// The window as it opens without a file (the start page).
int takeStartScreenshot(headroom::MainWindow& window, const QString& out)
{
    window.resize(kScreenshotWidth, kScreenshotHeight);
    window.show();
    QApplication::processEvents();
    if (!window.grab().save(out)) {
        std::fprintf(stderr, "headroom: cannot write %s\n", qPrintable(out));
        return 2;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    headroom::tuneAllocatorForInteractiveUse();
    preferOffscreenWhenHeadless(argc, argv);
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Headroom"));
    QApplication::setOrganizationName(QStringLiteral("Headroom"));
    QApplication::setApplicationVersion(QStringLiteral(HEADROOM_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.github.headroom.Headroom"));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("headroom"), QIcon(QStringLiteral(":/icons/headroom.svg"))));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Explore PyTorch CUDA memory snapshots."));
    parser.addHelpOption();
    QCommandLineOption versionOption(QStringList{QStringLiteral("v"), QStringLiteral("version")},
                                     QStringLiteral("Print the version, the Qt version and the commit."));
    parser.addOption(versionOption);
    QCommandLineOption screenshotOption(QStringLiteral("screenshot"),
                                        QStringLiteral("Render the main window for FILE (without FILE: the start page) offscreen into OUT.png and exit."),
                                        QStringLiteral("OUT.png"));
    parser.addOption(screenshotOption);
    QCommandLineOption deviceOption(QStringLiteral("device"), QStringLiteral("Show this device (its ordinal) first."),
                                    QStringLiteral("N"));
    parser.addOption(deviceOption);
    QCommandLineOption viewOption(QStringLiteral("view"),
                                  QStringLiteral("With --screenshot: render only this view (timeline, breakdown, "
                                                 "allocations, stacks, diagnosis, allocator, whatif, bookmarks, compare, ranks); .png, .svg or .pdf."),
                                  QStringLiteral("NAME"));
    parser.addOption(viewOption);
    QCommandLineOption themeOption(QStringLiteral("theme"), QStringLiteral("system, light or dark (default: the saved choice)."),
                                   QStringLiteral("THEME"));
    parser.addOption(themeOption);
    QCommandLineOption capacityOption(QStringLiteral("capacity"),
                                      QStringLiteral("Device memory to assume for this run when the file does not tell it "
                                                     "(e.g. 48GiB; default: Settings > Preferences)."),
                                      QStringLiteral("SIZE"));
    parser.addOption(capacityOption);
    QCommandLineOption allocConfOption(QStringLiteral("alloc-conf"),
                                       QStringLiteral("With --screenshot: draw the timeline's reserved memory as the "
                                                      "allocator replay predicts it under this PYTORCH_CUDA_ALLOC_CONF "
                                                      "(\"recorded\": the file's own setting)."),
                                       QStringLiteral("SETTING"));
    parser.addOption(allocConfOption);
    QCommandLineOption whatIfOption(QStringLiteral("whatif"),
                                    QStringLiteral("With --screenshot: set the what-if's levers (its settings as JSON, "
                                                   "e.g. '{\"micro_batch\": 8}') and draw the projected run on the "
                                                   "timeline."),
                                    QStringLiteral("JSON"));
    parser.addOption(whatIfOption);
    parser.addPositionalArgument(QStringLiteral("file"), QStringLiteral("A memory snapshot to open."),
                                 QStringLiteral("[FILE]"));
    parser.process(app);

    if (parser.isSet(versionOption)) {
        std::printf("headroom %s (Qt %s, commit %s)\n", HEADROOM_VERSION, qVersion(), HEADROOM_GIT_COMMIT);
        return 0;
    }

    const QStringList files = parser.positionalArguments();
    int device = -1;
    if (parser.isSet(deviceOption)) {
        bool ok = false;
        device = parser.value(deviceOption).toInt(&ok);
        if (!ok || device < 0) {
            std::fprintf(stderr, "headroom: --device needs a device ordinal (0, 1, ...)\n");
            return 2;
        }
    }
    // Units and theme before the first widget exists; --theme wins over the saved choice
    // for this run only.
    headroom::Preferences prefs = headroom::Preferences::load();
    if (parser.isSet(themeOption)) {
        const QString t = parser.value(themeOption);
        prefs.theme = t == QLatin1String("dark") ? headroom::Theme::Dark
                    : t == QLatin1String("light") ? headroom::Theme::Light
                                                  : headroom::Theme::System;
    }
    prefs.apply();
    headroom::MainWindow window;
    if (parser.isSet(capacityOption)) {
        const auto bytes = headroom::parseByteSize(parser.value(capacityOption).toStdString());
        if (!bytes || *bytes <= 0) {
            std::fprintf(stderr, "headroom: --capacity needs a size such as 80GiB, not \"%s\"\n",
                         qPrintable(parser.value(capacityOption)));
            return 2;
        }
        window.explorer()->analysis()->setDefaultCapacity(*bytes);
    }
    if (parser.isSet(screenshotOption)) {
        if (files.isEmpty() && !parser.isSet(viewOption)) // the start page
            return takeStartScreenshot(window, parser.value(screenshotOption));
        if (files.size() != 1) {
            std::fprintf(stderr, "headroom: --screenshot needs one FILE (none: the start page)\n");
            return 2;
        }
        return takeScreenshot(window, parser.value(screenshotOption), files.first(), device, parser.value(viewOption),
                              parser.value(allocConfOption), parser.value(whatIfOption));
    }
    // The default size, within the screen the window starts on (a 1280 x 1024 screen would
    // lose its right edge).
    const QRect screen = window.screen() ? window.screen()->availableGeometry() : QRect();
    const QSize size = screen.isValid() ? QSize(kScreenshotWidth, kScreenshotHeight).boundedTo(screen.size())
                                        : QSize(kScreenshotWidth, kScreenshotHeight);
    window.resize(size);
    if (screen.isValid() && !screen.contains(window.geometry()))
        window.move(screen.topLeft());
    window.show();
    if (!files.isEmpty()) {
        window.openFile(files.first());
        if (device >= 0) // once, when the file is there
            QObject::connect(window.loadController(), &headroom::LoadController::traceLoaded, &window,
                             [&window, device] { window.selectDevice(device); }, Qt::SingleShotConnection);
    }
    return app.exec();
}
