// SPDX-License-Identifier: MIT
// Every real file and synthetic fixture against the summary computed independently by
// tests/tools/snapshot_summary.py (stdlib Python) and committed in tests/golden/.
#include "core/analysis/summary.h"
#include "core/io/loader.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

fs::path inputFor(const std::string& base)
{
    const fs::path fixture = fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures" / base;
    if (fs::exists(fixture))
        return fixture;
    return fs::path(HEADROOM_REAL_TRACES_DIR) / base;
}

} // namespace

TEST_CASE("Summaries equal the independently computed goldens", "[golden]")
{
    static const char* kKeys[] = {"device", "segments", "reserved_bytes", "allocated_bytes", "active_bytes",
                                  "requested_bytes", "trace_entries", "actions", "peak_allocated_bytes",
                                  "peak_event_index", "oom", "reserved_curve_start", "reserved_peak_bytes"};
    int compared = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(HEADROOM_SOURCE_DIR) / "tests/golden")) {
        const std::string name = entry.path().filename().string();
        const std::string suffix = ".summary.json";
        if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
            continue;
        const std::string base = name.substr(0, name.size() - suffix.size());
        const fs::path input = inputFor(base);
        INFO(input.string());
        REQUIRE(fs::exists(input));
        nlohmann::json golden;
        std::ifstream(entry.path()) >> golden;
        const nlohmann::json actual = summaryJson(*Loader::load(input.string()));
        REQUIRE(actual["devices"].size() == golden["devices"].size());
        for (size_t d = 0; d < golden["devices"].size(); ++d)
            for (const char* key : kKeys) {
                INFO("device " << d << " key " << key);
                nlohmann::json value = actual["devices"][d][key];
                if (std::string_view(key) == "oom") // the oracle counts, it does not format frames
                    for (auto& o : value)
                        o.erase("frames");
                CHECK(value == golden["devices"][d][key]);
            }
        ++compared;
    }
    CHECK(compared >= 19);
}

TEST_CASE("Every real snapshot in shared/real_traces imports", "[golden][real]")
{
    int count = 0;
    for (const auto& entry : fs::directory_iterator(HEADROOM_REAL_TRACES_DIR)) {
        if (entry.path().extension() != ".pickle")
            continue;
        INFO(entry.path().string());
        auto trace = Loader::load(entry.path().string());
        REQUIRE(!trace->snapshot.devices.empty());
        CHECK(trace->timelines.size() == trace->snapshot.devices.size());
        ++count;
    }
    CHECK(count >= 5);
}

TEST_CASE("The full-step snapshot keeps frames shared and annotations", "[golden][real]")
{
    auto trace = Loader::load(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    const Snapshot& s = trace->snapshot;
    CHECK(s.frames.frameCount() <= 668); // 668 distinct frame dicts in the file
    CHECK(s.frames.stackCount() < 13000); // 12,665 distinct frame lists
    CHECK(s.annotations.size() == 4);
    CHECK(s.annotations[0].name.find("Optimizer.zero_grad") != std::string::npos);
    CHECK(s.devices[0].trace.anyTime);
    CHECK(!s.allocatorSettings.empty());
    // The compressed sample copy is the same data.
    auto gz = Loader::load(std::string(HEADROOM_SAMPLE_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle.gz");
    CHECK(gz->timelines[0].peakAllocated == trace->timelines[0].peakAllocated);
    CHECK(gz->snapshot.format.find("gzip") != std::string::npos);
}
