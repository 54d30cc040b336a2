// SPDX-License-Identifier: MIT
// The user's own categories (core/analysis/usercategories.h): a rules file's errors name the
// rule and what is wrong; the first matching rule claims an allocation, by its frames and by
// its user_metadata; the groups add up to what is alive.
#include "core/analysis/livegroups.h"
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/usercategories.h"
#include "core/io/loader.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace headroom;
using nlohmann::json;

namespace {

std::string errorOf(const std::string& text)
{
    try {
        UserCategories::parse(text, "rules.json");
    } catch (const UserCategoriesError& e) {
        return e.what();
    }
    return {};
}

/// Three live allocations: one from attention code, one from the optimizer with metadata, one
/// from the data loader.
std::shared_ptr<const LoadedTrace> threeAllocations()
{
    auto frame = [](const char* file, int line, const char* name) {
        return json{{"filename", file}, {"line", line}, {"name", name}};
    };
    const json attn = json::array({frame("model.py", 40, "attention"), frame("train.py", 10, "main")});
    const json opt = json::array({frame("torch/optim/adamw.py", 300, "step"), frame("train.py", 12, "main")});
    const json data = json::array({frame("loader.py", 5, "collate"), frame("train.py", 8, "main")});
    auto alloc = [](int64_t addr, int64_t size, const json& frames, int t) {
        return json{{"action", "alloc"}, {"addr", addr}, {"size", size}, {"stream", 0}, {"time_us", t}, {"frames", frames}};
    };
    json optAlloc = alloc(0x2000000, 2 << 20, opt, 2);
    optAlloc["user_metadata"] = "optimizer.state";
    const json doc = {
        {"segments", json::array({{{"device", 0}, {"address", 0x1000000}, {"total_size", 8 << 20}, {"stream", 0},
                                   {"blocks", json::array({{{"size", 8 << 20}, {"state", "inactive"}}})}}})},
        {"device_traces",
         json::array({json::array({alloc(0x1000000, 1 << 20, attn, 1), optAlloc, alloc(0x3000000, 4 << 20, data, 3)})})}};
    const std::string text = doc.dump();
    return Loader::loadBytes("three.json", std::vector<uint8_t>(text.begin(), text.end()));
}

} // namespace

TEST_CASE("A bad categories file says which rule and what is wrong", "[categories]")
{
    CHECK(errorOf("{\"categories\": [{\"name\": \"a\", \"function\": \"(x\"}]}").find(
              "rules.json: rule 1 (\"a\"): \"function\" is not a valid regular expression") == 0);
    CHECK(errorOf("[{\"name\": \"a\", \"fucntion\": \"x\"}]").find("unknown key \"fucntion\"") != std::string::npos);
    CHECK(errorOf("[{\"function\": \"x\"}]") == "rules.json: rule 1: \"name\" is missing or empty");
    CHECK(errorOf("[{\"name\": \"a\"}]").find("needs at least one of") != std::string::npos);
    CHECK(errorOf("[{\"name\": \"a\", \"file\": \"x\", \"color\": \"red\"}]").find("#rrggbb") != std::string::npos);
    CHECK(errorOf("[{\"name\": \"a\", \"file\": \"x\"}, {\"name\": \"a\", \"file\": \"y\"}]")
              .find("rule 2 (\"a\"): the name is already rule 1's") != std::string::npos);
    CHECK(errorOf("{\"categories\": [}").find("rules.json: not JSON at byte 1") == 0);
    CHECK(errorOf("{\"rules\": []}").find("expected a \"categories\" array") != std::string::npos);
    CHECK(errorOf("[{\"name\": \"a\", \"file\": 3}]").find("\"file\" must be a string") != std::string::npos);
    CHECK(errorOf("[]").empty());
}

TEST_CASE("The first matching rule claims an allocation, by frames and by user_metadata", "[categories]")
{
    const auto trace = threeAllocations();
    const DeviceAnalysis a = analyzeDevice(*trace, 0);
    const UserCategories rules = UserCategories::parse(R"({"categories": [
        {"name": "state by metadata", "metadata": "^optimizer\\."},
        {"name": "main loop", "function": "^main$", "file": "train\\.py"},
        {"name": "attention", "function": "attention"},
        {"name": "file and function on one frame", "function": "collate", "file": "train\\.py"}
    ]})",
                                                       "rules.json");
    const LiveGroups all = LiveGroups::at(*trace, 0, a, 2, 10, 3, &rules);
    REQUIRE(all.byUserCategory.size() == 4);
    // Rule order decides: the optimizer's allocation is the metadata rule's, the other two
    // are the main loop's (every stack passes through train.py:main), none is left for attention.
    CHECK(all.byUserCategory[0].bytes == 2 << 20);
    CHECK(all.byUserCategory[1].bytes == (1 << 20) + (4 << 20));
    CHECK(all.byUserCategory[2].bytes == 0);
    // The function and the file must match one frame: collate is in loader.py, not train.py.
    CHECK(all.byUserCategory[3].bytes == 0);
    CHECK(all.unclaimedBytes == 0);
    int64_t sum = all.unclaimedBytes;
    for (const UserCategoryGroup& g : all.byUserCategory)
        sum += g.bytes;
    CHECK(sum == all.bytes);

    const UserCategories narrow = UserCategories::parse(R"([{"name": "attention", "function": "attention", "color": "#ff8800"}])",
                                                        "narrow.json");
    const LiveGroups some = LiveGroups::at(*trace, 0, a, 2, 10, 3, &narrow);
    CHECK(some.byUserCategory[0].bytes == 1 << 20);
    CHECK(some.byUserCategory[0].color == "#ff8800");
    CHECK(some.unclaimedBytes == (2 << 20) + (4 << 20));
    CHECK(some.unclaimedCount == 2);
    // Without rules, nothing changes.
    CHECK(LiveGroups::at(*trace, 0, a, 2, 10).byUserCategory.empty());
}
