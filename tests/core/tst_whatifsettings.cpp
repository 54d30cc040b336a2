// SPDX-License-Identifier: MIT
// The what-if settings saved in a trace's user data: one writer, one reader, a round trip.
#include "core/whatif/calibration/batchratio.h"
#include "core/whatif/vocabulary/whatifmodel.h"
#include "core/whatif/query/whatifsettings.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

using namespace headroom;

TEST_CASE("What-if settings round-trip through their JSON; bad fields keep the defaults", "[whatif][settings]")
{
    WhatIfSettings s;
    s.config.microBatch = 3;
    s.config.accum = 8;
    s.config.seq = 2048;
    s.config.checkpoint = Checkpointing::Full;
    s.config.precision = Precision::AmpFp16;
    s.config.optimizer = OptimizerKind::Adam8bit;
    s.config.zero = 3;
    s.config.devices = 8;
    s.config.offload = Offload::Optimizer;
    s.config.flashAttention = true;
    s.config.trainableFraction = 0.25;
    s.config.expandableSegments = true;
    s.stated.microBatch = 2;
    s.stated.seq = 1024;
    s.stated.devices = 4;
    s.stated.precision = Precision::Bf16;
    s.capacityBytes = int64_t(48) << 30;
    s.spendFirst = Currency::Hardware;
    s.constants.mfuMax = 0.3;

    const nlohmann::json j = whatIfSettingsJson(s);
    CHECK(j["whatif"]["constants"].size() == 1); // only what differs from the defaults
    CHECK_FALSE(j["whatif"].contains("effective_batch"));
    const auto back = whatIfSettingsFromJson(nlohmann::json::parse(j.dump()), WhatIfSettings{});
    REQUIRE(back);
    CHECK(back->config == s.config);
    CHECK(back->stated.microBatch == 2);
    CHECK(back->stated.seq == 1024);
    CHECK(back->stated.devices == 4);
    CHECK(back->stated.precision == Precision::Bf16);
    CHECK(back->capacityBytes == s.capacityBytes);
    CHECK(back->spendFirst == Currency::Hardware);
    CHECK(back->constants.mfuMax == 0.3);

    // Not a what-if object, or fields of the wrong type: nothing, or the defaults.
    CHECK_FALSE(whatIfSettingsFromJson(nlohmann::json::parse("{\"other\": 1}"), WhatIfSettings{}));
    CHECK_FALSE(whatIfSettingsFromJson(nlohmann::json::parse("[1, 2]"), WhatIfSettings{}));
    WhatIfSettings defaults;
    defaults.config.microBatch = 5;
    const auto odd = whatIfSettingsFromJson(
        nlohmann::json::parse(R"({"whatif": {"micro_batch": "four", "precision": "fp7", "constants": {"mfu_max": -1}}})"),
        defaults);
    REQUIRE(odd);
    CHECK(odd->config.microBatch == 5);
    CHECK(odd->config.precision == defaults.config.precision);
    CHECK(odd->constants.mfuMax == WhatIfConstants{}.mfuMax);
}

TEST_CASE("A recalibration keeps the levers the user moved and takes the rest from the new reading",
          "[whatif][settings]")
{
    using namespace headroom;
    // Calibrated without a measured micro-batch: attention assumed fused, devices unknown.
    LeverConfig before;
    before.microBatch = 0;
    before.flashAttention = true;
    before.devices = 0;
    // The user asks for micro-batch 8 and fills in the measured values; the new calibration
    // reads eager attention and one device.
    LeverConfig edited = before;
    edited.microBatch = 8;
    LeverConfig after = before;
    after.microBatch = 4;
    after.flashAttention = false;
    after.devices = 1;
    const LeverConfig c = rebasedLevers(edited, before, after);
    CHECK(c.microBatch == 8);
    CHECK_FALSE(c.flashAttention);
    CHECK(c.devices == 1);
    // Nothing moved: the new reading as it is.
    CHECK(rebasedLevers(before, before, after) == after);
}

TEST_CASE("A micro-batch in ratios is saved as a ratio, never read back as a count", "[whatif][settings][ratio]")
{
    WhatIfSettings s;
    s.microBatchUnits = kBatchRatioUnits;
    s.config.microBatch = 2; // x1/2 of the measured run
    const nlohmann::json j = whatIfSettingsJson(s);
    CHECK_FALSE(j["whatif"].contains("micro_batch"));
    CHECK(j["whatif"]["micro_batch_ratio"].get<double>() == Approx(0.5));
    const std::optional<WhatIfSettings> back = whatIfSettingsFromJson(j, WhatIfSettings{});
    REQUIRE(back);
    CHECK(back->microBatchUnits == kBatchRatioUnits);
    CHECK(back->config.microBatch == 2);

    // Laid over a calibration that knows the measured micro-batch (8), x1/2 is 4.
    WhatIfBaseline known;
    known.config.microBatch = 8;
    CHECK(inBaselineUnits(back->config, back->microBatchUnits, known).microBatch == 4);
    // A count laid over a ratio baseline has no ratio: it takes the measured run's (x1).
    WhatIfBaseline ratio;
    ratio.config.microBatch = kBatchRatioUnits;
    ratio.microBatchUnits = kBatchRatioUnits;
    LeverConfig count;
    count.microBatch = 16;
    CHECK(inBaselineUnits(count, 0, ratio).microBatch == kBatchRatioUnits);

    // A count is read as a count.
    WhatIfSettings c;
    c.config.microBatch = 6;
    const std::optional<WhatIfSettings> counted = whatIfSettingsFromJson(whatIfSettingsJson(c), s);
    REQUIRE(counted);
    CHECK(counted->microBatchUnits == 0);
    CHECK(counted->config.microBatch == 6);
}

TEST_CASE("Every constant's source resolves: a cited document exists and names the constant", "[whatif][settings]")
{
    // Issue 45: thirteen constants cited "a guess, docs/whatif-model.md", which never named them.
    auto read = [](const std::string& rel) {
        std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/" + rel);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    for (const auto& e : WhatIfConstants::entries()) {
        INFO(e.key << ": " << e.source);
        const std::string source = e.source;
        const size_t at = source.find("docs/");
        if (at == std::string::npos) {
            CHECK_FALSE((e.guess && source.find("guess") != std::string::npos)); // a guess says where it is discussed
            continue;
        }
        const std::string doc = source.substr(at, source.find(".md", at) + 3 - at);
        const std::string text = read(doc);
        REQUIRE_FALSE(text.empty());
        if (source.find("Constants") != std::string::npos) {
            const size_t section = text.find("\n## Constants\n");
            REQUIRE(section != std::string::npos);
            CHECK(text.find("`" + std::string(e.key) + "`", section) != std::string::npos);
        }
    }
}
