// SPDX-License-Identifier: MIT
// BackgroundJob: latest wins, cancel, progress, and an owner destroyed while its job runs.
// Workers sleep in small steps and wait on flags the test sets, so every order below is
// forced by the test, never by timing; each wait is event-driven with a generous limit.
#include <catch2/catch.hpp>

#include "ui/explorer/backgroundjob.h"

#include <QSignalSpy>
#include <QTest>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

using namespace headroom;

namespace {

constexpr int kWaitMs = 60000;

/// Sleeps in 1 ms steps until `flag` is set or a minute has passed (a test that went
/// wrong ends instead of hanging the pool).
void sleepUntil(const std::atomic<bool>& flag)
{
    for (int i = 0; i < 60000 && !flag.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

bool waitFor(const std::function<bool()>& condition)
{
    return condition() || QTest::qWaitFor(condition, kWaitMs);
}

/// Flags shared with a worker; the worker holds its own reference.
struct Gate {
    std::atomic<bool> release{false};
    std::atomic<bool> sawCancel{false};
    std::atomic<bool> exited{false};
};

} // namespace

TEST_CASE("background job: latest wins, only the second request's result arrives")
{
    BackgroundJob job;
    std::vector<int> results;
    auto first = std::make_shared<Gate>();
    // The first worker ignores the flag and returns only after the second request: its
    // result is dropped all the same.
    job.start(
        [first](BackgroundJob::Control& control) {
            sleepUntil(first->release);
            first->sawCancel = control.isCancelled();
            first->exited = true;
            return 1;
        },
        [&](int r) { results.push_back(r); });
    CHECK(job.isRunning());
    // The second finishes after the first, so the first's (dropped) delivery is queued
    // before the second's: once 2 arrives, 1 has had its chance.
    job.start(
        [first](BackgroundJob::Control&) {
            sleepUntil(first->exited);
            return 2;
        },
        [&](int r) { results.push_back(r); });
    first->release = true;
    REQUIRE(waitFor([&] { return !results.empty(); }));
    CHECK(results == std::vector<int>{2});
    CHECK(first->sawCancel);
    CHECK_FALSE(job.isRunning());
}

TEST_CASE("background job: cancel sets the worker's flag and drops its result")
{
    BackgroundJob job;
    std::vector<int> results;
    auto gate = std::make_shared<Gate>();
    job.start(
        [gate](BackgroundJob::Control& control) {
            while (!control.isCancelled() && !gate->release)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            gate->sawCancel = control.isCancelled();
            gate->exited = true;
            return 1;
        },
        [&](int r) { results.push_back(r); });
    job.cancel();
    CHECK_FALSE(job.isRunning());
    REQUIRE(waitFor([&] { return gate->exited.load(); }));
    CHECK(gate->sawCancel);
    // A later job's result comes after the cancelled one's delivery was queued.
    job.start([](BackgroundJob::Control&) { return 2; }, [&](int r) { results.push_back(r); });
    REQUIRE(waitFor([&] { return !results.empty(); }));
    CHECK(results == std::vector<int>{2});
    job.cancel(); // idle: nothing happens
    CHECK_FALSE(job.isRunning());
}

TEST_CASE("background job: finishNow waits for the running job and delivers its result once, now")
{
    BackgroundJob job;
    std::vector<int> results;
    CHECK_FALSE(job.finishNow()); // idle
    auto gate = std::make_shared<Gate>();
    job.start(
        [gate](BackgroundJob::Control&) {
            sleepUntil(gate->release);
            return 7;
        },
        [&](int r) { results.push_back(r); });
    // The worker is released from another thread while this one waits in finishNow().
    std::thread releaser([gate] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate->release = true;
    });
    CHECK(job.finishNow());
    releaser.join();
    CHECK(results == std::vector<int>{7}); // delivered inside finishNow, no event loop turn
    CHECK_FALSE(job.isRunning());
    CHECK_FALSE(job.finishNow());
    // The watcher's own delivery, queued meanwhile, is dropped: a later job's result is the
    // only other one to arrive.
    job.start([](BackgroundJob::Control&) { return 8; }, [&](int r) { results.push_back(r); });
    REQUIRE(waitFor([&] { return results.size() == 2; }));
    CHECK(results == std::vector<int>{7, 8});
}

TEST_CASE("background job: progress is polled on the GUI thread and emitted when it moves")
{
    BackgroundJob job;
    QSignalSpy progress(&job, &BackgroundJob::progressChanged);
    auto gate = std::make_shared<Gate>();
    bool delivered = false;
    job.start(
        [gate](BackgroundJob::Control& control) {
            control.setProgress(250);
            sleepUntil(gate->release);
            control.setProgress(3, 4); // done of total
            sleepUntil(gate->exited);
            control.setProgress(5000); // clamped
            return true;
        },
        [&](bool r) { delivered = r; });
    auto seen = [&](int permille) {
        for (const QList<QVariant>& args : progress)
            if (args.at(0).toInt() == permille)
                return true;
        return false;
    };
    REQUIRE(waitFor([&] { return seen(250); }));
    CHECK(job.progress() == 250);
    gate->release = true;
    REQUIRE(waitFor([&] { return seen(750); }));
    gate->exited = true;
    REQUIRE(waitFor([&] { return delivered; }));
    CHECK(job.progress() == 0); // idle
    // Only moves are emitted, each once in a row, and within 0..1000.
    for (qsizetype i = 0; i < progress.size(); ++i) {
        const int p = progress.at(i).at(0).toInt();
        CHECK(p >= 0);
        CHECK(p <= 1000);
        if (i > 0)
            CHECK(p != progress.at(i - 1).at(0).toInt());
    }
}

TEST_CASE("background job: destroying the owner while a job runs neither blocks nor delivers")
{
    auto gate = std::make_shared<Gate>();
    bool delivered = false;
    auto* owner = new QObject;
    auto* job = new BackgroundJob(owner);
    job->start(
        [gate](BackgroundJob::Control& control) {
            // Runs until the test releases it, which it does only after the owner is gone:
            // a destructor that waited for the worker would hang here (and time out).
            while (!gate->release) {
                gate->sawCancel = control.isCancelled();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            gate->exited = true;
            return 1;
        },
        [&](int) { delivered = true; });
    delete owner;
    CHECK_FALSE(gate->exited); // it returned while the worker still ran
    REQUIRE(waitFor([&] { return gate->sawCancel.load(); }));
    gate->release = true;
    REQUIRE(waitFor([&] { return gate->exited.load(); }));
    // The finished worker's delivery, if any, would be queued now: let it through.
    BackgroundJob later;
    bool laterDelivered = false;
    later.start([](BackgroundJob::Control&) { return 0; }, [&](int) { laterDelivered = true; });
    REQUIRE(waitFor([&] { return laterDelivered; }));
    CHECK_FALSE(delivered);
}

TEST_CASE("background job: the worker writes sizes in the units in force when it was started")
{
    BackgroundJob job;
    std::string result;
    auto gate = std::make_shared<Gate>();
    setByteUnits(ByteUnits::Decimal);
    job.start(
        [gate](BackgroundJob::Control&) {
            sleepUntil(gate->release); // the preference changes before the worker formats
            return formatBytes(1500000000);
        },
        [&](std::string r) { result = std::move(r); });
    setByteUnits(ByteUnits::Binary);
    gate->release = true;
    REQUIRE(waitFor([&] { return !result.empty(); }));
    CHECK(result == "1.50 GB");
    // The GUI thread itself follows the preference.
    CHECK(formatBytes(1500000000) == "1.40 GiB");
}
