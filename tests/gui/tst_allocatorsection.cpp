// SPDX-License-Identifier: MIT
// The what-if panel's Allocator section as a user meets it: a real snapshot replays under its
// recorded setting, a toggled setting is replayed off the GUI thread and joins the projected
// peak and the timeline's curve, the capacity moves the answer, and the diagnosis's replay
// verdict becomes the ladder's first rung. HEADROOM_ALLOCATOR_SCREENSHOT=path saves the panel.
#include <catch2/catch.hpp>

#include "ui/whatif/allocatorsection.h"
#include "ui/whatif/whatifpanel.h"

#include "core/analysis/diagnosis.h"
#include "core/io/loader.h"
#include "core/whatif/ladder/allocatorverdict.h"

#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTest>

#include <cstdlib>
#include <filesystem>

using namespace headroom;

namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

bool waitForReplay(AllocatorSection* s)
{
    return QTest::qWaitFor([s] { return !s->isReplaying() && s->result(); }, 30000);
}

QString summaryOf(WhatIfPanel& panel) { return panel.findChild<QLabel*>(QStringLiteral("whatifSummary"))->text(); }

} // namespace

TEST_CASE("The Allocator section replays a real snapshot under the recorded and another setting", "[gui][whatif][allocator]")
{
    WhatIfPanel panel;
    panel.resize(1100, 720);
    panel.show();
    const auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt21_ftcourse_memory_snapshot.pickle");
    QSignalSpy calibrated(&panel, &WhatIfPanel::calibrated);
    panel.setTrace(trace, 0);
    AllocatorSection* section = panel.allocatorSection();
    REQUIRE(waitForReplay(section));
    // The calibration runs on the pool beside the replay: the summary the replay joins is the
    // projection's, which exists once it is back (either may finish first).
    REQUIRE((!panel.isCalibrating() || calibrated.wait(60000)));
    // As recorded (the file records no setting: the defaults), the replay reproduces the recording.
    CHECK(section->isRecordedSetting());
    REQUIRE(section->recordedResult());
    CHECK(section->recordedResult()->segmentEventsRecorded == 152);
    CHECK(section->recordedResult()->segmentEventsMatched == 152);
    auto* status = section->findChild<QLabel*>(QStringLiteral("allocStatus"));
    CHECK(status->text().contains(QStringLiteral("152/152 segment events")));
    CHECK_FALSE(summaryOf(panel).contains(QStringLiteral("Allocator replay")));

    // The user ticks expandable_segments: the model's lever follows and the replay answers.
    QSignalSpy curves(&panel, &WhatIfPanel::allocatorCurveReady);
    auto* expandable = section->findChild<QCheckBox*>(QStringLiteral("allocExpandable"));
    expandable->click();
    CHECK(panel.config().expandableSegments);
    REQUIRE(waitForReplay(section));
    REQUIRE(section->result()->config.expandableSegments);
    // Expandable segments map the large pool in pages: less reserved than the recording's 6.03 GiB.
    CHECK(section->result()->reservedPeak < section->recordedResult()->recordedReservedPeak);
    REQUIRE(curves.count() == 1);
    const auto curve = curves.at(0).at(0).value<std::shared_ptr<const std::vector<int64_t>>>();
    REQUIRE(curve);
    CHECK(curve->size() == trace->snapshot.devices[0].trace.count());
    CHECK(curves.at(0).at(1).toString() == QStringLiteral("reserved, simulated (expandable_segments:True)"));
    CHECK(summaryOf(panel).contains(QStringLiteral("Allocator replay of the recorded requests")));
    CHECK(summaryOf(panel).contains(QStringLiteral("no OOM")));
    CHECK(panel.markdown().contains(QStringLiteral("Allocator replay of the recorded requests: Under expandable_segments:True")));

    // On a 2 GiB device the same requests run out of memory, and the panel says where.
    panel.setCapacity(2 * kGiB);
    REQUIRE(waitForReplay(section));
    REQUIRE(section->result()->firstSimulatedOom);
    const QString event = QString::number(section->result()->firstSimulatedOom->event);
    CHECK(status->text().contains(QStringLiteral("OOM at event ") + event));
    CHECK(summaryOf(panel).contains(QStringLiteral("runs out of memory on 2.00 GiB at event ") + event));

    if (const char* shot = std::getenv("HEADROOM_ALLOCATOR_SCREENSHOT")) {
        QTest::qWait(100); // the posted layout requests of the new text
        panel.findChild<QScrollArea*>(QStringLiteral("whatifLevers"))->ensureWidgetVisible(section);
        panel.grab().save(QString::fromLocal8Bit(shot));
    }

    // Back to the recorded setting: the timeline's simulated curve goes.
    QSignalSpy cleared(&panel, &WhatIfPanel::allocatorCurveCleared);
    expandable->click();
    CHECK_FALSE(panel.config().expandableSegments);
    REQUIRE(QTest::qWaitFor([&] { return cleared.count() > 0; }, 30000));
    CHECK_FALSE(summaryOf(panel).contains(QStringLiteral("Allocator replay")));
}

TEST_CASE("The Allocator section says whether a setting avoids a recorded OOM", "[gui][whatif][allocator]")
{
    // A generated run whose 2 GiB request fails with 4.5 GiB cached in blocks too small for it.
    const std::string path = std::string(HEADROOM_GEN_DIR) + "/allocator_section_oom.pickle";
    if (!std::filesystem::exists(path)) {
        std::filesystem::create_directories(HEADROOM_GEN_DIR);
        const std::string cmd = "python3 " HEADROOM_SOURCE_DIR "/tools/gen_snapshot.py --out " + path +
                                " --layers 12 --steps 3 --oom > /dev/null 2>&1";
        REQUIRE(std::system(cmd.c_str()) == 0);
    }
    const auto trace = Loader::load(path);
    WhatIfPanel panel;
    panel.resize(1100, 720);
    panel.setTrace(trace, 0);
    // Hidden, the panel leaves the cores to the analysis; shown, it replays.
    CHECK_FALSE(panel.allocatorSection()->isReplaying());
    CHECK_FALSE(panel.allocatorSection()->result());
    // An export of the hidden panel gets the answer at once (no "replaying..." in the picture).
    {
        WhatIfPanel hidden;
        hidden.setTrace(trace, 0);
        hidden.allocatorSection()->replayNow();
        REQUIRE(hidden.allocatorSection()->result());
        CHECK(hidden.allocatorSection()->isRecordedSetting());
        CHECK(hidden.allocatorSection()->findChild<QLabel*>(QStringLiteral("allocStatus"))->text().contains(
            QStringLiteral("segment events")));
    }
    panel.show();
    const int64_t capacity = estimateCapacity(*trace, 0, std::nullopt).bytes;
    panel.setCapacity(capacity);
    AllocatorSection* section = panel.allocatorSection();
    REQUIRE(waitForReplay(section));
    section->findChild<QCheckBox*>(QStringLiteral("allocExpandable"))->click();
    REQUIRE(waitForReplay(section));
    REQUIRE(section->result()->oomAvoided);
    CHECK(*section->result()->oomAvoided);
    CHECK(section->findChild<QLabel*>(QStringLiteral("allocStatus"))->text().contains(QStringLiteral("OOM avoided")));

    // The diagnosis's verdict (the same replay) is the ladder's first rung when the levers are as
    // recorded and the model's projection misses the capacity; here a 1 GiB device makes it miss.
    AllocatorVerdict v = *AllocatorVerdict::forOom(*trace, 0);
    REQUIRE(v.avoidedBy == "expandable_segments:True");
    section->findChild<QCheckBox*>(QStringLiteral("allocExpandable"))->click(); // as recorded again
    // Its replay runs on a worker: the levers count as recorded once it is back (under load the
    // ladder was finished first and had no allocator rung, 1 run in 12).
    REQUIRE(waitForReplay(section));
    panel.setCapacity(1 * kGiB);
    v.capacity = 1 * kGiB;
    panel.setAllocatorVerdict(v);
    panel.finishLadderNow();
    REQUIRE_FALSE(panel.ladder().rungs.empty());
    CHECK(panel.ladder().rungs.front().allocatorSetting == "expandable_segments:True");
    CHECK(panel.ladder().firstFit == 0);
    // A verdict for another capacity says nothing about this one.
    v.capacity = 2 * kGiB;
    panel.setAllocatorVerdict(v);
    for (const Rung& r : panel.ladder().rungs)
        CHECK(r.allocatorSetting.empty());
}
