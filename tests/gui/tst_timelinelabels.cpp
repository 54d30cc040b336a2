// SPDX-License-Identifier: MIT
// The timeline legible at the window's default size and at 1280 x 1024 (issue 49), with the
// simulated reserved line on: no legend entry or title cut, no two marker labels (peak, capacity, OOMs) over each other or over the
// phase names' strip, on the bundled sample with its capacity line and on OOM files.
#include <catch2/catch.hpp>

#include "ui/explorer/analysiscontroller.h"
#include "ui/shell/explorer.h"
#include "ui/shell/loadcontroller.h"
#include "ui/shell/mainwindow.h"
#include "ui/timeline/timelineplotitems.h"
#include "ui/timeline/timelineview.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QCheckBox>
#include <QTest>
#include <QFontMetrics>
#include <QSignalSpy>

#include "analysedwindow.h"

using namespace headroom;

namespace {

void checkLegible(QCustomPlot& plot, const TimelinePlotItems& items)
{
    const QRect widget = plot.rect();
    const QCPTextElement* title = items.title();
    INFO("title: " << title->text().toStdString());
    CHECK(QFontMetrics(title->font()).horizontalAdvance(title->text()) <= title->outerRect().width());
    CHECK(widget.contains(title->outerRect()));
    for (int i = 0; i < plot.legend->itemCount(); ++i) {
        auto* item = qobject_cast<QCPPlottableLegendItem*>(plot.legend->item(i));
        if (!item || !item->visible())
            continue;
        const QString name = item->plottable()->name();
        INFO("legend entry: " << name.toStdString());
        CHECK(widget.contains(item->outerRect()));
        CHECK(QFontMetrics(item->font()).horizontalAdvance(name) + plot.legend->iconSize().width() <=
              item->outerRect().width());
    }
    const auto labels = items.markerLabels();
    CHECK_FALSE(labels.empty());
    for (size_t i = 0; i < labels.size(); ++i) {
        const QRectF& r = labels[i].second;
        INFO("label: " << labels[i].first.toStdString() << " at " << r.x() << "," << r.y() << " " << r.width() << "x"
                       << r.height() << "; strip to y " << items.phaseStrip().bottom());
        CHECK_FALSE(labels[i].second.intersects(items.phaseStrip()));
        for (size_t j = i + 1; j < labels.size(); ++j) {
            INFO("and: " << labels[j].first.toStdString());
            CHECK_FALSE(labels[i].second.intersects(labels[j].second));
        }
    }
}

} // namespace

TEST_CASE("the timeline's title, legend and marker labels do not collide", "[timeline][labels]")
{
    const QString sample = QStringLiteral(HEADROOM_SAMPLE_DIR "/pt27_kk_memory_ctx128_fullstep.pickle.gz");
    for (const QString& file : {sample, realTrace("pt20_yiyi_oom_snapshot.pickle"),
                                QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/cpu/imbalanced_oom.pickle")}) {
        for (const QSize size : {QSize(1400, 800), QSize(1280, 1024)}) {
            INFO(file.toStdString() << " at " << size.width() << "x" << size.height());
            MainWindow window;
            window.explorer()->analysis()->setDefaultCapacity(int64_t(40) << 30); // the capacity line drawn
            window.resize(size);
            window.show();
            QSignalSpy analysed(window.explorer(), &Explorer::dataAvailable);
            window.openFile(file);
            REQUIRE((analysed.count() > 0 || analysed.wait(kTimeoutMs)));
            QApplication::processEvents();
            auto* plot = window.explorer()->timeline()->findChild<QCustomPlot*>();
            REQUIRE(plot);
            // Every optional line on: the simulated reserved one has the longest legend entry.
            QCheckBox* simulated = nullptr;
            for (QCheckBox* box : window.explorer()->timeline()->findChildren<QCheckBox*>())
                if (box->text() == QStringLiteral("Simulated reserved"))
                    simulated = box;
            REQUIRE(simulated);
            simulated->click();
            auto legendHas = [plot](const QString& word) {
                for (int i = 0; i < plot->legend->itemCount(); ++i)
                    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
                        if (item->plottable()->name().contains(word))
                            return true;
                return false;
            };
            REQUIRE(QTest::qWaitFor([&] { return legendHas(QStringLiteral("simulated")); }, kTimeoutMs));
            for (int pass = 0; pass < 3; ++pass) { // laid out at this size: the legend's columns and
                plot->replot();                  // the y range refit to it (queued replots)
                QApplication::processEvents();
            }
            checkLegible(*plot, window.explorer()->timeline()->plotItems());
        }
    }
}
