// SPDX-License-Identifier: MIT
#include "core/analysis/memoryanalysis.h"
#include "core/budget/budgetpolicy.h"
#include "core/budget/budgetrecorder.h"
#include "core/budget/budgetstore.h"
#include "core/budget/openbudgetstore.h"
#include "core/io/loader.h"
#include "core/util/sha256.h"
#include "core/whatif/query/fitjudgement.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

using namespace headroom;

namespace {

std::string tempStore(const char* name)
{
    const auto p = std::filesystem::temp_directory_path() / ("headroom_tst_budget_" + std::string(name) + ".db");
    for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(p.string() + suffix);
    return p.string();
}

std::string bytesOf(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

BudgetRun run(const std::string& id, int64_t peak, const std::string& at)
{
    BudgetRun r;
    r.runId = id;
    r.config = {{"model", "m"}, {"micro_batch", "4"}};
    r.peakAllocated = peak;
    r.capacity = 100;
    r.recordedAt = at;
    r.toolVersion = "test";
    return r;
}

} // namespace

TEST_CASE("SHA-256 is FIPS 180-4's on its test vectors", "[budget]")
{
    Sha256 empty;
    CHECK(empty.hexDigest() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    Sha256 abc2;
    abc2.update("abc", 3);
    CHECK(abc2.hexDigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // Two blocks, fed in pieces that straddle the block boundary.
    const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    Sha256 pieces;
    pieces.update(two.data(), 5);
    pieces.update(two.data() + 5, two.size() - 5);
    CHECK(pieces.hexDigest() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("The policy validates a configuration only on its worst-case step, without an OOM, within the margin",
          "[budget]")
{
    const BudgetPolicy policy; // margin 10%: a peak of at most 90 on 100
    BudgetRun shortStep = run("a", 50, "2026-01-01T00:00:00Z");
    shortStep.worstCaseTokens = 4096;
    shortStep.maxStepTokens = 2048;
    auto s = assessBudget({shortStep}, policy);
    REQUIRE(s.size() == 1);
    CHECK_FALSE(s[0].validated());
    CHECK(s[0].verdicts[0].shortfall == RunShortfall::NotWorstCase);
    CHECK(describeStatus(s[0]).find("largest step recorded is 2048 of 4096") != std::string::npos);

    BudgetRun worst = run("b", 80, "2026-01-02T00:00:00Z");
    worst.maxStepTokens = 4096; // the declared worst case comes from the other run
    s = assessBudget({shortStep, worst}, policy);
    CHECK(s[0].validated());
    CHECK(s[0].validatedPeak == 80);
    CHECK(s[0].worstPeak == 80);
    CHECK(s[0].roomLeft() == 20);
    REQUIRE(s[0].trend);
    CHECK(*s[0].trend == Approx(0.6));

    BudgetRun tight = worst;
    tight.runId = "c";
    tight.peakAllocated = 95;
    s = assessBudget({shortStep, tight}, policy);
    CHECK_FALSE(s[0].validated());
    CHECK(s[0].verdicts[1].shortfall == RunShortfall::OverMargin);

    BudgetRun oomed = worst;
    oomed.runId = "d";
    oomed.oom = true;
    oomed.oomIteration = 3;
    oomed.recordedAt = "2026-01-03T00:00:00Z";
    s = assessBudget({shortStep, oomed}, policy);
    CHECK_FALSE(s[0].validated());
    // An OOM after a validating run takes the validation back.
    s = assessBudget({shortStep, worst, oomed}, policy);
    CHECK_FALSE(s[0].validated());
    CHECK(describeStatus(s[0]).find("ran out of memory at iteration 3") != std::string::npos);

    BudgetRun undeclared = run("e", 10, "2026-01-01T00:00:00Z");
    undeclared.maxStepTokens = 4096;
    s = assessBudget({undeclared}, policy);
    CHECK(s[0].verdicts[0].shortfall == RunShortfall::NoWorstCaseDeclared);
}

TEST_CASE("Runs group by the key fields and ignore the rest", "[budget]")
{
    BudgetPolicy policy;
    BudgetRun a = run("a", 10, "t1"), b = run("b", 20, "t2"), c = run("c", 30, "t3");
    b.config["host"] = "node7"; // not a key field: same configuration
    c.config["micro_batch"] = "8";
    auto s = assessBudget({a, b, c}, policy);
    REQUIRE(s.size() == 2);
    CHECK(budgetConfigKey(a.config, policy) == "model=m;micro_batch=4");
    policy.keyFields = {"model"};
    CHECK(assessBudget({a, b, c}, policy).size() == 1);
    CHECK(assessBudget({a, b, c}, BudgetPolicy{}, {{"micro_batch", "8"}}).size() == 1);
}

TEST_CASE("The SQLite store keeps each run once and reads back what it wrote", "[budget]")
{
    const std::string path = tempStore("roundtrip");
    BudgetRun r = run("x/0", 123456789012, "2026-12-06T01:00:00Z");
    r.peakReserved = 2 * r.peakAllocated;
    r.oom = true;
    r.oomIteration = 2;
    r.iterationPeaks = {1, 2, 3};
    r.categoriesAtPeak = {{"parameter", 7}};
    r.maxStepTokens = 10;
    {
        auto store = openBudgetStore(path);
        CHECK(store->add(r));
        CHECK_FALSE(store->add(r));
    }
    auto store = openBudgetStore(path);
    const auto runs = store->runs();
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].peakAllocated == r.peakAllocated);
    CHECK(runs[0].peakReserved == r.peakReserved);
    CHECK(runs[0].oomIteration == 2);
    CHECK(runs[0].iterationPeaks == r.iterationPeaks);
    CHECK(runs[0].categoriesAtPeak == r.categoriesAtPeak);
    CHECK(runs[0].config == r.config);
    CHECK_FALSE(runs[0].worstCaseTokens);
}

TEST_CASE("A file that is not a store is refused and left as it was", "[budget]")
{
    const std::string path = tempStore("corrupt");
    {
        std::ofstream out(path, std::ios::binary);
        out << "this is not an SQLite database, only text that looks nothing like one\n";
    }
    const std::string before = bytesOf(path);
    CHECK_THROWS_WITH(openBudgetStore(path), Catch::Contains(path) && Catch::Contains("not a database"));
    CHECK(bytesOf(path) == before);
}

TEST_CASE("Many writers on one SQLite store lose nothing", "[budget]")
{
    const std::string path = tempStore("writers");
    // A new store: the writers create its tables and switch it to WAL among themselves.
    std::vector<std::thread> writers;
    for (int w = 0; w < 8; ++w)
        writers.emplace_back([&, w] {
            auto store = openBudgetStore(path);
            for (int i = 0; i < 25; ++i)
                store->add(run(std::to_string(w) + "/" + std::to_string(i), i, "t"));
        });
    for (auto& t : writers)
        t.join();
    CHECK(openBudgetStore(path)->runs().size() == 200);
}

TEST_CASE("A PostgreSQL URL's password never reaches a message", "[budget]")
{
    CHECK(redactStoreUrl("postgresql://ci:s3cret@db.example/budget") == "postgresql://ci:***@db.example/budget");
    CHECK(redactStoreUrl("postgres://ci:p@ss@db/budget?sslmode=require") == "postgres://ci:***@db/budget?sslmode=require");
    CHECK(redactStoreUrl("postgresql://db/budget?user=ci&password=s3cret") == "postgresql://db/budget?user=ci&password=***");
    CHECK(redactStoreUrl("/tmp/budget.db") == "/tmp/budget.db");
    // A server that is not there: the error names the store without its password.
    try {
        openBudgetStore("postgresql://ci:s3cret@127.0.0.1:1/budget?connect_timeout=2");
        FAIL("connected to nothing");
    } catch (const BudgetStoreError& e) {
        CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
        CHECK(std::string(e.what()).find("postgresql://ci:***@127.0.0.1:1/budget") != std::string::npos);
    }
}

TEST_CASE("A real OOM file gives one run per device with its peak, its OOM and its categories", "[budget]")
{
    const std::string file = HEADROOM_SOURCE_DIR "/tests/data/cpu/imbalanced_oom.pickle";
    const auto trace = Loader::load(file);
    BudgetRecordOptions o;
    o.file = file;
    o.fileHash = sha256OfFile(file);
    o.overrides = {{"model", "mlp"}, {"worst_case_tokens", "64"}};
    const auto runs = budgetRunsOf(trace, o);
    REQUIRE(runs.size() == trace->snapshot.devices.size());
    int ooms = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
        CHECK(runs[i].peakAllocated == trace->timelines[i].peakAllocated);
        CHECK(runs[i].runId == o.fileHash + "/" + std::to_string(runs[i].device));
        CHECK(runs[i].config.at("model") == "mlp");
        CHECK(runs[i].worstCaseTokens == 64);
        CHECK_FALSE(runs[i].categoriesAtPeak.empty());
        ooms += runs[i].oom;
    }
    CHECK(ooms == 1);
}

TEST_CASE("A snapshot's run passes the budget's margin exactly when check --fit passes it", "[budget]")
{
    // One answer (docs/budget.md, "The policy"): the budget judges a snapshot's margin by the
    // projection check --fit judges, at every capacity and margin, not by the peak allocated.
    const std::string file = HEADROOM_SOURCE_DIR "/tests/data/cpu/budget_worst_step.pickle";
    const auto trace = Loader::load(file);
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const FitJudgement at1 = judgeFit(trace, 0, a, int64_t(1) << 30, kDefaultFitMargin);
    REQUIRE(at1.projected);
    BudgetRecordOptions o;
    o.file = file;
    o.fileHash = "hash";
    o.overrides = {{"max_step_tokens", "64"}, {"worst_case_tokens", "64"}};
    int passes = 0, fails = 0;
    for (double scale : {0.8, 1.0, 1.05, 1.12, 1.3, 2.0}) {
        o.capacity = int64_t(at1.peakHigh * scale);
        const auto runs = budgetRunsOf(trace, o);
        REQUIRE(runs.size() == 1);
        REQUIRE(runs[0].projected);
        for (double margin : {0.02, 0.10, 0.25}) {
            BudgetPolicy policy;
            policy.margin = margin;
            const bool fit = judgeFit(trace, 0, a, *o.capacity, margin).passed();
            const RunVerdict v = judgeRun(runs[0], 64, policy);
            CAPTURE(scale, margin, runs[0].projected->marginLeft);
            CHECK(v.byProjection);
            CHECK(fit == (v.shortfall == RunShortfall::None));
            CHECK((v.shortfall == RunShortfall::None || v.shortfall == RunShortfall::OverMargin));
            // The Budget plot's limit line is the verdict's: the high end passes exactly under it
            // (within the byte its floor drops). No line where the context alone fills the
            // device, and none decides a run the allocator's simulation refused: neither passes.
            if (!v.judgedLimit || runs[0].projected->marginLeft == kFitsNoMargin)
                CHECK_FALSE(fit);
            else if (std::abs(double(runs[0].projected->peakHigh - *v.judgedLimit)) > 1)
                CHECK(fit == (runs[0].projected->peakHigh <= *v.judgedLimit));
            (fit ? passes : fails)++;
        }
    }
    CHECK(passes > 0);
    CHECK(fails > 0);
}

TEST_CASE("The budget's projection is kept by the store and judges the room left", "[budget]")
{
    const std::string path = tempStore("projection");
    BudgetRun r = run("p/0", 60, "2026-12-07T01:00:00Z");
    r.maxStepTokens = r.worstCaseTokens = 8;
    r.projected = BudgetRun::Projected{85, 92, 0.07};
    openBudgetStore(path)->add(r);
    const auto runs = openBudgetStore(path)->runs();
    REQUIRE(runs.size() == 1);
    REQUIRE(runs[0].projected);
    CHECK(runs[0].projected->peak == 85);
    CHECK(runs[0].projected->peakHigh == 92);
    CHECK(runs[0].projected->marginLeft == Approx(0.07));
    CHECK_FALSE(runs[0].projected->context); // a row written before the context was kept
    // 60 of 100 allocated is within a 10% margin; the projection, 7% free, is not.
    auto s = assessBudget(runs, BudgetPolicy{});
    CHECK(s[0].verdicts[0].shortfall == RunShortfall::OverMargin);
    CHECK(s[0].worstPeak == 60);
    CHECK(s[0].worstDevicePeak == 85);
    CHECK(s[0].roomLeft() == 15);
    CHECK(describeStatus(s[0]).find("as check --fit projects it") != std::string::npos);
    BudgetPolicy loose;
    loose.margin = 0.05;
    CHECK(assessBudget(runs, loose)[0].validated());
    // No context kept: no limit on the high end is drawn, rather than the allocated peak's.
    CHECK_FALSE(s[0].verdicts[0].judgedLimit);
    r.runId = "p/1";
    r.projected->context = 20;
    openBudgetStore(path)->add(r);
    const auto withContext = openBudgetStore(path)->runs();
    REQUIRE(withContext.size() == 2);
    REQUIRE(withContext[1].projected->context);
    CHECK(*withContext[1].projected->context == 20);
    const RunVerdict v = judgeRun(withContext[1], 8, BudgetPolicy{});
    REQUIRE(v.judgedLimit);
    CHECK(*v.judgedLimit == 92); // 20 + (100 - 20) x 0.9
}
