// SPDX-License-Identifier: MIT
// TimelineState and TimelineSampler without a widget: the mapping between events and x keys
// in both axis modes and at its edges, the simulated reserved lookup, and the events the
// curves are sampled at.
#include <catch2/catch.hpp>

#include "core/io/loader.h"
#include "core/replay/replay.h"
#include "ui/timeline/timelinecurves.h"
#include "ui/timeline/timelinesampler.h"
#include "ui/timeline/timelinestate.h"

#include <algorithm>

using namespace headroom;

namespace {

constexpr int64_t MiB = 1024 * 1024;

/// Five events, the fourth without a time (or, `allTimed`, at 150 µs): keys 0, 0, 150, 150,
/// 300 either way (µs, the span is short).
DeviceData smallDevice(bool allTimed = false)
{
    DeviceData dev;
    auto add = [&](TraceAction a, uint64_t addr, int64_t size, int64_t t) {
        dev.trace.append({a, addr, size, 0, t, 0});
    };
    add(TraceAction::SegmentAlloc, 0x1000000, 2 * MiB, 100);
    add(TraceAction::Alloc, 0x1000000, 1 * MiB, 100);
    add(TraceAction::Alloc, 0x1100000, MiB / 2, 250);
    add(TraceAction::FreeCompleted, 0x1000000, 1 * MiB, allTimed ? 250 : TraceEvents::kNoTime);
    add(TraceAction::FreeCompleted, 0x1100000, MiB / 2, 400);
    dev.trace.anyTime = true;
    return dev;
}

struct SmallState {
    DeviceData device;
    MemoryTimeline timeline;
    TimelineState state;

    explicit SmallState(bool allTimed = false)
        : device(smallDevice(allTimed))
        , timeline(replayDevice(device))
    {
        state.device = &device;
        state.timeline = &timeline;
        state.deviceIndex = 0;
        state.curves = TimelineCurves::compute(&device, &timeline);
    }
};

} // namespace

TEST_CASE("TimelineState: no device maps nothing", "[timelinestate]")
{
    TimelineState s;
    CHECK(s.eventCount() == 0);
    CHECK_FALSE(s.hasTime());
    CHECK(s.eventIndexAxis()); // no time: event indices whatever is preferred
    CHECK(s.eventAtKey(0.0) == -1);
    CHECK(s.firstEventAtOrAfterKey(3.0) == 0);
    CHECK(s.simulatedReservedAt(0) == -1);
}

/// The keys of smallDevice(), either way they are known.
static void checkSmallKeys(const TimelineState& s)
{
    // keyOf: the time since the first event; the state before the first event sits at 0,
    // an event without a time keeps the key before it, and past the end is the last event.
    CHECK(s.keyOf(-1) == 0.0);
    CHECK(s.keyOf(0) == 0.0);
    CHECK(s.keyOf(1) == 0.0);
    CHECK(s.keyOf(2) == 150.0);
    CHECK(s.keyOf(3) == 150.0);
    CHECK(s.keyOf(4) == 300.0);
    CHECK(s.keyOf(99) == 300.0);

    // eventAtKey: the last event at or before the key, clamped to the events.
    CHECK(s.eventAtKey(-5.0) == 0);
    CHECK(s.eventAtKey(0.0) == 1);
    CHECK(s.eventAtKey(149.9) == 1);
    CHECK(s.eventAtKey(150.0) == 3);
    CHECK(s.eventAtKey(299.0) == 3);
    CHECK(s.eventAtKey(300.0) == 4);
    CHECK(s.eventAtKey(1e9) == 4);

    // firstEventAtOrAfterKey: the first event whose key is >= key; eventCount() past the end.
    CHECK(s.firstEventAtOrAfterKey(-1.0) == 0);
    CHECK(s.firstEventAtOrAfterKey(0.0) == 0);
    CHECK(s.firstEventAtOrAfterKey(0.001) == 2);
    CHECK(s.firstEventAtOrAfterKey(150.0) == 2);
    CHECK(s.firstEventAtOrAfterKey(150.5) == 4);
    CHECK(s.firstEventAtOrAfterKey(300.0) == 4);
    CHECK(s.firstEventAtOrAfterKey(300.5) == 5);
}

TEST_CASE("TimelineState: time keys, with repeated times and an event without one", "[timelinestate]")
{
    SmallState f;
    const TimelineState& s = f.state;
    REQUIRE(s.eventCount() == 5);
    REQUIRE(s.hasTime());
    REQUIRE_FALSE(s.eventIndexAxis());
    REQUIRE(s.curves->timeUnitUs == 1.0);

    checkSmallKeys(s);
}

TEST_CASE("TimelineState: time keys read from a trace whose every event has a time, in order", "[timelinestate]")
{
    // Then the keys are computed from time_us rather than stored (docs/performance.md): the
    // same keys, and the same searches, as the stored ones above.
    SmallState f(true);
    REQUIRE(f.state.hasTime());
    REQUIRE(f.state.curves->keyCount() == 5);
    checkSmallKeys(f.state);
}

TEST_CASE("TimelineState: event-index keys", "[timelinestate]")
{
    SmallState f;
    f.state.preferTime = false;
    const TimelineState& s = f.state;
    REQUIRE(s.eventIndexAxis());

    CHECK(s.keyOf(-1) == -1.0); // the state before the first event
    CHECK(s.keyOf(0) == 0.0);
    CHECK(s.keyOf(3) == 3.0);

    CHECK(s.eventAtKey(-3.0) == 0);
    CHECK(s.eventAtKey(-0.5) == 0);
    CHECK(s.eventAtKey(2.0) == 2);
    CHECK(s.eventAtKey(2.99) == 2);
    CHECK(s.eventAtKey(4.5) == 4);
    CHECK(s.eventAtKey(100.0) == 4);

    CHECK(s.firstEventAtOrAfterKey(-3.0) == 0);
    CHECK(s.firstEventAtOrAfterKey(0.0) == 0);
    CHECK(s.firstEventAtOrAfterKey(2.0) == 2);
    CHECK(s.firstEventAtOrAfterKey(2.01) == 3);
    CHECK(s.firstEventAtOrAfterKey(4.0) == 4);
    CHECK(s.firstEventAtOrAfterKey(4.01) == 5);
    CHECK(s.firstEventAtOrAfterKey(1e9) == 5);

    for (int64_t e = 0; e < s.eventCount(); ++e) {
        CHECK(s.eventAtKey(s.keyOf(e)) == e);
        CHECK(s.firstEventAtOrAfterKey(s.keyOf(e)) == e);
    }
}

TEST_CASE("TimelineState: a real snapshot maps every event back to itself", "[timelinestate]")
{
    auto trace = Loader::load(HEADROOM_REAL_TRACES_DIR "/pt27_silmont_mem_snapshot.pickle");
    REQUIRE(trace);
    TimelineState s;
    s.setDevice(trace, 0);
    s.curves = TimelineCurves::compute(s.device, s.timeline);
    REQUIRE(s.eventCount() == 97);
    REQUIRE(s.hasTime());
    for (bool time : {true, false}) {
        s.preferTime = time;
        INFO((time ? "time" : "event index"));
        for (int64_t e = 0; e < s.eventCount(); ++e) {
            // Events sharing a time map to the last of them; the key is theirs all the same.
            const int64_t at = s.eventAtKey(s.keyOf(e));
            CHECK(at >= e);
            CHECK(s.keyOf(at) == s.keyOf(e));
            CHECK(s.firstEventAtOrAfterKey(s.keyOf(e)) <= e);
            if (e > 0)
                CHECK(s.keyOf(e) >= s.keyOf(e - 1));
        }
        CHECK(s.firstEventAtOrAfterKey(s.keyOf(s.eventCount() - 1) + 1) == s.eventCount());
    }

    // A device index out of range shows nothing.
    s.setDevice(trace, 3);
    CHECK(s.device == nullptr);
    CHECK(s.eventCount() == 0);
}

TEST_CASE("TimelineState: simulated reserved after each event", "[timelinestate]")
{
    SmallState f;
    TimelineState& s = f.state;
    CHECK(s.simulatedReservedAt(2) == -1); // none set
    s.simulatedReserved = {2 * MiB, 2 * MiB, 4 * MiB, 4 * MiB, 0};
    CHECK(s.simulatedReservedAt(-1) == f.timeline.initialReserved);
    CHECK(s.simulatedReservedAt(2) == 4 * MiB);
    CHECK(s.simulatedReservedAt(4) == 0);
    CHECK(s.simulatedReservedAt(5) == -1);
    // A new device drops it.
    s.setDevice(nullptr, -1);
    CHECK(s.simulatedReserved.empty());
    CHECK(s.simulatedLabel.isEmpty());
}

TEST_CASE("TimelineSampler: the events in view, the state before the first, keys and values", "[timelinestate]")
{
    SmallState f;
    f.state.preferTime = false;
    const TimelineState& s = f.state;
    const MinMaxPyramid pyramid(f.timeline.allocated);

    // The whole trace: the state before event 0, then every event (more buckets than events).
    const TimelineSampler all(s, s.keyOf(-1), s.keyOf(4), 256);
    CHECK(all.first() == 0);
    CHECK(all.last() == 5);
    const std::vector<int64_t> events = all.events(f.timeline.allocated, pyramid);
    REQUIRE(events.size() == 6);
    CHECK(events.front() == -1);
    CHECK(events[1] == 0);
    CHECK(events.back() == 4);
    QVector<double> keys, values;
    all.fill(events, f.timeline.allocated, 7, keys, values);
    REQUIRE(keys.size() == 6);
    CHECK(keys[0] == -1.0);
    CHECK(values[0] == 7.0); // `initial` before the first event
    CHECK(keys[3] == 2.0);
    CHECK(values[3] == double(f.timeline.allocated[2]));

    // Events 2..3 in view: one event of margin on both sides, no state before the first.
    const TimelineSampler part(s, 2.0, 3.0, 256);
    CHECK(part.first() == 1);
    CHECK(part.last() == 5);
    CHECK(part.events(f.timeline.allocated, pyramid).front() == 1);

    // Two buckets over five events keep the peak.
    const TimelineSampler coarse(s, s.keyOf(-1), s.keyOf(4), 2);
    const std::vector<int64_t> few = coarse.events(f.timeline.allocated, pyramid);
    int64_t peak = 0;
    for (int64_t e : few)
        if (e >= 0)
            peak = std::max(peak, f.timeline.allocated[size_t(e)]);
    CHECK(peak == f.timeline.peakAllocated);

    // No device: nothing to sample.
    TimelineState empty;
    const TimelineSampler none(empty, 0.0, 1.0, 256);
    CHECK(none.events(f.timeline.allocated, pyramid).empty());
}
