// SPDX-License-Identifier: MIT
// The multi-file summary: where a row's rank comes from, the order of the rows and the spread.
#include "core/analysis/ranktable.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace headroom;

namespace {

struct RankDevice {
    int device = 0;
    std::string type = "cuda";
    int rank = -1;
    int64_t reserved = 0;
    int64_t peak = 0;
    size_t ooms = 0;
};

std::shared_ptr<const LoadedTrace> trace(const std::string& path, const std::vector<RankDevice>& devices)
{
    auto t = std::make_shared<LoadedTrace>();
    t->snapshot.path = path;
    for (const RankDevice& s : devices) {
        DeviceData d;
        d.device = s.device;
        d.deviceType = s.type;
        d.rank = s.rank;
        d.ooms.resize(s.ooms);
        t->snapshot.devices.push_back(std::move(d));
        MemoryTimeline tl;
        tl.device = s.device;
        tl.peakReserved = s.reserved;
        tl.peakAllocated = s.peak;
        t->timelines.push_back(std::move(tl));
    }
    return t;
}

} // namespace

TEST_CASE("RankTable::rankFromFileName reads rank<N> from the file name only", "[ranktable]")
{
    CHECK(RankTable::rankFromFileName("rank3.pickle") == 3);
    CHECK(RankTable::rankFromFileName("/runs/x/snapshot_rank_12.pickle") == 12);
    CHECK(RankTable::rankFromFileName("RANK-7.json") == 7); // any case
    CHECK(RankTable::rankFromFileName("rank0.pickle") == 0);
    CHECK(RankTable::rankFromFileName("ranking_rank5.pickle") == 5); // the first "rank" with a number
    CHECK(RankTable::rankFromFileName("/runs/rank4/snapshot.pickle") == -1); // a directory is not the file
    CHECK(RankTable::rankFromFileName("snapshot.pickle") == -1);
    CHECK(RankTable::rankFromFileName("rank_.pickle") == -1);
    CHECK(RankTable::rankFromFileName("") == -1);
    // At most six digits: a long run of digits cannot overflow std::stoi.
    CHECK(RankTable::rankFromFileName("rank12345678901234.pickle") == 123456);
}

TEST_CASE("RankTable: the rank the file records, else the file name's, else the position", "[ranktable]")
{
    const RankTable table({trace("b/rank7.pickle", {{.device = 0, .rank = 2, .peak = 10}}), // recorded: 2
                           trace("a/rank1.pickle", {{.device = 0, .peak = 20}}),            // name: 1
                           trace("c/snapshot.pickle", {{.device = 0, .peak = 30}})});       // position: 2
    const auto& rows = table.rows();
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].rank == 1);
    CHECK(rows[0].file == "a/rank1.pickle");
    // Two rows with rank 2 and device 0: the input order is kept.
    CHECK(rows[1].rank == 2);
    CHECK(rows[1].file == "b/rank7.pickle");
    CHECK(rows[2].rank == 2);
    CHECK(rows[2].file == "c/snapshot.pickle");
}

TEST_CASE("RankTable: one row per GPU device, host memory left out, sorted by rank then device", "[ranktable]")
{
    const RankTable table({trace("rank1.pickle", {{.device = -1, .type = "cpu", .peak = 999},
                                                  {.device = 1, .reserved = 400, .peak = 300, .ooms = 2},
                                                  {.device = 0, .reserved = 200, .peak = 100}}),
                           trace("rank0.pickle", {{.device = 0, .type = "hip", .reserved = 800, .peak = 700}})});
    const auto& rows = table.rows();
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].rank == 0);
    CHECK(rows[0].deviceType == "hip");
    CHECK(rows[0].reservedBytes == 800);
    CHECK(rows[0].peakAllocatedBytes == 700);
    CHECK(rows[1].rank == 1);
    CHECK(rows[1].device == 0);
    CHECK(rows[1].reservedBytes == 200); // the timeline that belongs to this device, not the cpu's
    CHECK(rows[2].device == 1);
    CHECK(rows[2].ooms == 2);

    const nlohmann::json j = table.toJson();
    REQUIRE(j["ranks"].size() == 3);
    CHECK(j["ranks"][2]["oom"] == 2);
    CHECK(j["ranks"][0]["device_type"] == "hip");
    const auto& peak = j["spread"]["peak_allocated_bytes"];
    CHECK(peak["min"] == 100);
    CHECK(peak["max"] == 700);
    CHECK(peak["difference"] == 600);
    CHECK(peak["min_rank"] == 1);
    CHECK(peak["max_rank"] == 0);
    CHECK(peak["max_over_min"].get<double>() == Approx(7.0));
    CHECK(j["spread"]["reserved_peak_bytes"]["max"] == 800);

    const std::string text = table.toText();
    CHECK(text.find("spread of peak allocated") != std::string::npos);
    CHECK(text.find("OUT OF MEMORY events: 2") != std::string::npos);
    CHECK(text.find("cuda 1") != std::string::npos);
}

TEST_CASE("RankTable: ties in the spread go to the first row; a zero minimum has no ratio", "[ranktable]")
{
    const RankTable table({trace("rank0.pickle", {{.peak = 0}}), trace("rank1.pickle", {{.peak = 0}}),
                           trace("rank2.pickle", {{.peak = 0}})});
    const nlohmann::json spread = table.toJson()["spread"]["peak_allocated_bytes"];
    CHECK(spread["min_rank"] == 0);
    CHECK(spread["max_rank"] == 0);
    CHECK(spread["difference"] == 0);
    CHECK(spread["max_over_min"].get<double>() == 0.0);
}

TEST_CASE("RankTable: no files, one file", "[ranktable]")
{
    const RankTable none(std::vector<std::shared_ptr<const LoadedTrace>>{});
    CHECK(none.rows().empty());
    const nlohmann::json j = none.toJson();
    CHECK(j["ranks"].empty());
    CHECK(j["spread"]["peak_allocated_bytes"]["difference"] == 0);
    CHECK(none.toText().find("OUT OF MEMORY") == std::string::npos);

    const RankTable one({trace("rank3.pickle", {{.reserved = 2048, .peak = 1024}})});
    REQUIRE(one.rows().size() == 1);
    CHECK(one.rows()[0].rank == 3);
    // One row has no spread to show.
    CHECK(one.toText().find("spread") == std::string::npos);
    CHECK(one.toJson()["spread"]["reserved_peak_bytes"]["max_over_min"].get<double>() == Approx(1.0));
}
