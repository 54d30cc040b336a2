// SPDX-License-Identifier: MIT
// One answer (issue 45): the same file at the same capacity through the command line's JSON, the
// what-if panel, the diagnosis and the postmortem's what-if section, on every real snapshot in the
// repository and the bundled samples. Each frontend renders one core session; any number that
// differs between two of them is a second computation somewhere.
#include <catch2/catch.hpp>

#include "core/util/units.h"
#include "core/whatif/vocabulary/whatifmodel.h"
#include "ui/shell/explorer.h"
#include "ui/views/diagnosisview.h"
#include "ui/whatif/projectedtimelinejob.h"
#include "ui/whatif/whatifpanel.h"
#include "ui/whatif/whatifview.h"
#include "ui/plot/categorystyle.h"

#include <nlohmann/json.hpp>

#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QProcess>
#include <QTextBrowser>

#include "analysedwindow.h"

using namespace headroom;

namespace {

struct CliAnswer {
    int exitCode = -1;
    nlohmann::json json;
};

CliAnswer cli(const QStringList& args)
{
    QProcess p;
    p.start(QStringLiteral(HEADROOM_CLI), args);
    REQUIRE(p.waitForFinished(kTimeoutMs));
    CliAnswer a;
    a.exitCode = p.exitCode();
    if (a.exitCode == 0)
        a.json = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    return a;
}

QStringList oneAnswerFiles()
{
    QStringList files;
    for (const QString& dir : {QStringLiteral(HEADROOM_REAL_TRACES_DIR), QStringLiteral(HEADROOM_SAMPLE_DIR)})
        for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.pickle"), QStringLiteral("*.pickle.gz")},
                                                         QDir::Files, QDir::Name))
            files << f.absoluteFilePath();
    // The profiler's and Kineto's files (no what-if to give) and a three-device OOM recorded on the CPU.
    for (const QFileInfo& f : QDir(QStringLiteral(HEADROOM_REAL_TRACES_DIR)).entryInfoList({QStringLiteral("*.json.gz")}))
        files << f.absoluteFilePath();
    files << QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/cpu/imbalanced_oom.pickle");
    // Postmortem files as they are (recorded mid-run) and frameworks' own memory (a run recorded
    // sharded reads zero = 3 from its gathers).
    for (const QString& pattern : {QStringLiteral("cpu/decoder_late_*.pickle"), QStringLiteral("frameworks/*.pickle")}) {
        const QFileInfo p(QStringLiteral(HEADROOM_SOURCE_DIR "/tests/data/") + pattern);
        for (const QFileInfo& f : QDir(p.path()).entryInfoList({p.fileName()}, QDir::Files, QDir::Name))
            files << f.absoluteFilePath();
    }
    return files;
}

/// The capacity in the panel's combo, as a user chooses it; the explorer analyses again.
void chooseCapacity(Analysed& a, const QString& text)
{
    auto* combo = a.explorer().whatIf()->panel()->findChild<QComboBox*>(QStringLiteral("whatifCapacity"));
    REQUIRE(combo);
    const int index = combo->findText(text);
    REQUIRE(index >= 0);
    if (index == combo->currentIndex())
        return;
    QSignalSpy analysed(&a.explorer(), &Explorer::dataAvailable);
    combo->setCurrentIndex(index);
    REQUIRE(analysed.wait(kTimeoutMs));
    QApplication::processEvents();
}

void checkProjection(WhatIfPanel& panel, const nlohmann::json& j)
{
    const Projection& p = panel.projection();
    CHECK(int64_t(p.peak) == j["peak_bytes"].get<int64_t>());
    CHECK(int64_t(p.peakLow) == j["peak_low_bytes"].get<int64_t>());
    CHECK(int64_t(p.peakHigh) == j["peak_high_bytes"].get<int64_t>());
    CHECK(int64_t(p.peakAllocated) == j["peak_allocated_bytes"].get<int64_t>());
    CHECK(std::string(verdictName(p.verdict)) == j["verdict"].get<std::string>());
    CHECK(p.time.known == !j["step_time_s"].is_null());
    if (p.time.known)
        CHECK(p.time.total == Approx(j["step_time_s"].get<double>()));
    // The postmortem's what-if section says the same peak and verdict.
    const QString md = panel.markdown();
    CHECK(md.contains(QStringLiteral("Projected peak **%1**").arg(formatBytesQ(int64_t(p.peak), 1))));
    if (panel.device().capacityBytes > 0)
        CHECK(md.contains(QStringLiteral(": **%1**").arg(QString::fromUtf8(verdictName(p.verdict).data()))));
}

void checkLadder(Analysed& a, const nlohmann::json& j)
{
    WhatIfPanel& panel = *a.explorer().whatIf()->panel();
    panel.finishLadderNow();
    const Ladder& l = panel.ladder();
    CHECK(l.fitsAsIs == j["fits_as_is"].get<bool>());
    REQUIRE(l.rungs.size() == j["rungs"].size());
    CHECK(l.firstFit == j["first_fit"].get<int>());
    for (size_t i = 0; i < l.rungs.size(); ++i) {
        INFO("rung " << i + 1);
        CHECK(l.rungs[i].title == j["rungs"][i]["title"].get<std::string>());
        CHECK(int64_t(l.rungs[i].projection.peak) == j["rungs"][i]["peak_bytes"].get<int64_t>());
        CHECK(std::string(verdictName(l.rungs[i].projection.verdict)) == j["rungs"][i]["verdict"].get<std::string>());
    }
    // The diagnosis's first move is the ladder's first fitting rung, with its peak.
    if (l.firstFit < 0)
        return;
    const Rung& fit = l.rungs[size_t(l.firstFit)];
    const QString diagnosis = a.explorer().diagnosis()->browser()->toPlainText();
    if (diagnosis.contains(QStringLiteral("First move: as run"))) {
        CHECK(diagnosis.contains(QString::fromStdString(fit.title)));
        CHECK(diagnosis.contains(QString::fromStdString(formatBytes(int64_t(fit.projection.peak)))));
    }
}

} // namespace

TEST_CASE("one answer: the CLI, the panel, the diagnosis and the postmortem agree on every real file",
          "[whatif][oneanswer]")
{
    const QStringList files = oneAnswerFiles();
    REQUIRE(files.size() >= 10);
    int compared = 0, ladders = 0;
    for (const QString& file : files) {
        Analysed a(file);
        WhatIfPanel& panel = *a.explorer().whatIf()->panel();
        // The file's own capacity (its OOM record's, else unknown), then 40 GiB and 24 GiB chosen.
        for (const QString& capacity : {QString(), QStringLiteral("40 GiB"), QStringLiteral("24 GiB")}) {
            INFO(file.toStdString() << " at " << (capacity.isEmpty() ? "the file's capacity" : capacity.toStdString()));
            if (!capacity.isEmpty())
                chooseCapacity(a, capacity);
            panel.finishCalibration();
            panel.projectedTimeline()->finishNow(); // the simulated run judges the verdict
            QApplication::processEvents();
            QStringList args{QStringLiteral("whatif"), QStringLiteral("--json"), file};
            if (!capacity.isEmpty())
                args << QStringLiteral("--capacity") << QString(capacity).remove(QLatin1Char(' '));
            const CliAnswer w = cli(args);
            if (w.exitCode != 0) { // the trace cannot answer: neither does the panel, no figure
                const auto* summary = panel.findChild<QLabel*>(QStringLiteral("whatifSummary"));
                REQUIRE(summary);
                CHECK((!panel.calibrationError().isEmpty() || summary->text().contains(QStringLiteral("Needs a measured value"))));
                continue;
            }
            REQUIRE(panel.calibrationError().isEmpty());
            checkProjection(panel, w.json);
            ++compared;
            if (panel.device().capacityBytes <= 0)
                continue; // no ladder without a capacity, in either
            args[0] = QStringLiteral("ladder");
            const CliAnswer l = cli(args);
            REQUIRE(l.exitCode == 0);
            checkLadder(a, l.json);
            ++ladders;
        }
    }
    CHECK(compared >= 12);
    CHECK(ladders >= 10);
}
