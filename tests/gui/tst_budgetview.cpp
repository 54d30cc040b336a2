// SPDX-License-Identifier: MIT
// The Budget view (issue 48): a store named in the view, the open file recorded with its
// button as a person would click it, and the verdict the view shows the one `headroom-cli
// budget status` prints for the same store.
#include "analysedwindow.h"

#include "ui/views/budgetview.h"

#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace headroom;

namespace {

void waitForStore(BudgetView* view, QSignalSpy& read)
{
    REQUIRE((read.count() > 0 || read.wait(kTimeoutMs)));
    read.clear();
    REQUIRE_FALSE(view->isBusy());
}

nlohmann::json cliStatus(const QString& db)
{
    QProcess cli;
    cli.start(QStringLiteral(HEADROOM_CLI), {QStringLiteral("budget"), QStringLiteral("status"), QStringLiteral("--json"),
                                             QStringLiteral("--db"), db});
    REQUIRE(cli.waitForFinished(kTimeoutMs));
    REQUIRE(cli.exitCode() == 0);
    return nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
}

} // namespace

TEST_CASE("The Budget view records the open file and says what budget status says", "[budget][gui]")
{
    Analysed a(QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/cpu/budget_short_steps.pickle"));
    a.explorer().showView(QStringLiteral("budget"));
    auto* view = a.explorer().budget();
    QSignalSpy read(view, &BudgetView::storeRead);
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("budget.db"));

    view->setStore(db);
    waitForStore(view, read);
    CHECK(view->configurations().empty());
    CHECK(view->statusText().contains(QStringLiteral("no runs recorded yet")));
    // Nothing to draw: no axes (an empty plot's default range read "5 B").
    auto* plot = view->findChild<QCustomPlot*>();
    REQUIRE(plot);
    CHECK_FALSE(plot->yAxis->visible());

    QPushButton* record = nullptr;
    for (QPushButton* b : view->findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Record this file"))
            record = b;
    REQUIRE(record);
    REQUIRE(record->isEnabled());
    QTest::mouseClick(record, Qt::LeftButton);
    waitForStore(view, read);

    REQUIRE(view->configurations().size() == 1);
    REQUIRE(view->shownConfiguration() == size_t(0));
    CHECK(plot->yAxis->visible());
    const ConfigStatus& s = view->configurations()[0];
    CHECK(s.runs.size() == 1);
    CHECK_FALSE(s.validated());
    const nlohmann::json cli = cliStatus(db);
    REQUIRE(cli["configurations"].size() == 1);
    CHECK(cli["configurations"][0]["key"] == s.key);
    const QString sentence = QString::fromStdString(cli["configurations"][0]["status"].get<std::string>());
    CHECK(sentence.startsWith(QStringLiteral("not validated: never run on its worst-case step")));
    CHECK(view->statusText().startsWith(sentence));

    // Clicked again: the same file adds nothing.
    QTest::mouseClick(record, Qt::LeftButton);
    waitForStore(view, read);
    CHECK(view->configurations()[0].runs.size() == 1);
    view->setStore(QString()); // the store is remembered: the next window of this run must not read it
}
