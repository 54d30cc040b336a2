// SPDX-License-Identifier: MIT
// JSON inputs (Chrome traces, profiler timelines, JSON snapshots) against the numbers
// computed independently by tests/tools/json_summary.py (goldens in tests/golden/json).
#include "core/analysis/summary.h"
#include "core/io/fakeaddresses.h"
#include "core/io/jsoninteger.h"
#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "picklebuilder.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <tuple>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

const fs::path kJsonFixtures = fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures/json";

std::string real(const char* name)
{
    return (fs::path(HEADROOM_REAL_TRACES_DIR) / name).string();
}

std::shared_ptr<const LoadedTrace> loadText(const std::string& text, const std::string& name = "t.json")
{
    return Loader::loadBytes(name, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string loadError(const std::string& text)
{
    try {
        loadText(text);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_CASE("JSON inputs equal the independently computed goldens", "[formats][golden]")
{
    int compared = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(HEADROOM_SOURCE_DIR) / "tests/golden/json")) {
        const std::string name = entry.path().filename().string();
        const std::string base = name.substr(0, name.size() - std::string(".summary.json").size());
        fs::path input = kJsonFixtures / base;
        if (!fs::exists(input))
            input = fs::path(HEADROOM_REAL_TRACES_DIR) / base;
        INFO(input.string());
        REQUIRE(fs::exists(input));
        nlohmann::json golden;
        std::ifstream(entry.path()) >> golden;
        const nlohmann::json actual = summaryJson(*Loader::load(input.string()));
        REQUIRE(actual["devices"].size() == golden["devices"].size());
        for (size_t d = 0; d < golden["devices"].size(); ++d)
            for (const auto& [key, value] : golden["devices"][d].items()) {
                INFO("device " << d << " key " << key);
                if (key == "oom" && value.is_number())
                    CHECK(actual["devices"][d]["oom"].size() == value.get<size_t>());
                else
                    CHECK(actual["devices"][d][key] == value);
            }
        ++compared;
    }
    CHECK(compared >= 8);
}

TEST_CASE("The issue's real-file numbers", "[formats][real]")
{
    auto pt113 = Loader::load(real("pt113_hta_df_index_resolver.pt.trace.json.gz"));
    const DeviceData* cuda1 = pt113->snapshot.findDevice(1);
    REQUIRE(cuda1);
    CHECK(cuda1->deviceType == "cuda");
    CHECK(cuda1->trace.count() == 26770);
    CHECK(pt113->timelineFor(1)->peakAllocated == 6629508096);
    CHECK(cuda1->rank == 1);
    CHECK_FALSE(cuda1->relativeCurve);
    const DeviceData* cpu = pt113->snapshot.findDevice(-1);
    REQUIRE(cpu);
    CHECK(cpu->deviceType == "cpu");
    CHECK(cpu->trace.count() == 1240);
    // Windows for the phase analysis: ProfilerStep#N, optimizer, backward functions.
    int steps = 0, optim = 0, backward = 0;
    for (const TimeWindow& w : pt113->snapshot.timeWindows) {
        steps += w.kind == TimeWindowKind::ProfilerStep;
        optim += w.kind == TimeWindowKind::OptimizerStep;
        backward += w.kind == TimeWindowKind::Backward;
    }
    CHECK(steps == 5);
    CHECK(optim == 5);
    CHECK(backward == 2030);

    auto raw = Loader::load(real("hta_memory_timeline.raw.json.gz"));
    REQUIRE(raw->snapshot.devices.size() == 1);
    CHECK(raw->timelines[0].peakAllocated == 3082832104);
    CHECK(raw->snapshot.devices[0].trace.category.size() == 16845);
    CHECK(raw->snapshot.devices[0].sourceFormat == "memory timeline (raw)");

    auto pt19 = Loader::load(real("pt19_kineto_resnet50_worker0.pt.trace.json.gz"));
    const DeviceData* gpu = pt19->snapshot.findDevice(0);
    REQUIRE(gpu);
    CHECK(gpu->relativeCurve);
    const nlohmann::json s = summaryJson(*pt19);
    CHECK(s["devices"][1]["allocated_curve"] == "relative to the start of the window");
    CHECK(summaryText(*pt19).find("relative to the start of the window") != std::string::npos);
}

TEST_CASE("2.x Chrome trace: fractional ts, baseTimeNanoseconds, OOM, HIP, rank", "[formats]")
{
    auto t = Loader::load((kJsonFixtures / "chrome_2x_oom.pt.trace.json").string());
    const Snapshot& s = t->snapshot;
    REQUIRE(s.devices.size() == 3);
    CHECK(s.devices[0].deviceType == "cpu");
    CHECK(s.devices[1].deviceType == "cuda");
    CHECK(s.devices[2].deviceType == "hip");
    CHECK(s.devices[1].rank == 3);
    REQUIRE(s.devices[1].ooms.size() == 1);
    CHECK(s.devices[1].ooms[0].size == (int64_t(80) << 30));
    CHECK(s.devices[1].trace.action.back() == TraceAction::Oom);
    // 1714000000000000000 ns + 10.125 µs, exactly.
    CHECK(s.devices[1].trace.timeUs.front() == 1714000000000010);
    CHECK(std::is_sorted(s.devices[1].trace.timeUs.begin(), s.devices[1].trace.timeUs.end()));
    // The 2 GiB alive before the window are in the curve (Total Allocated), not lost.
    CHECK(t->timelineFor(0)->initialAllocated == (int64_t(2) << 30));
    CHECK(s.timeWindows.size() == 4);
    CHECK(s.timeWindows.front().name == "ProfilerStep#1");
}

TEST_CASE("A JSON snapshot summarises exactly like its pickle", "[formats]")
{
    auto fromPickle = summaryJson(*Loader::load(real("pt27_silmont_mem_snapshot.pickle")));
    auto fromJson = summaryJson(*Loader::load((kJsonFixtures / "silmont_snapshot.json.gz").string()));
    for (auto* j : {&fromPickle, &fromJson})
        for (auto& d : (*j)["devices"])
            d.erase("source_format");
    CHECK(fromPickle["devices"] == fromJson["devices"]);
    CHECK(fromPickle["distinct_frames"] == fromJson["distinct_frames"]);
    CHECK(fromPickle["distinct_stacks"] == fromJson["distinct_stacks"]);
    CHECK(fromPickle["schema"] == fromJson["schema"]);
}

TEST_CASE("The [times, sizes] timeline keeps exact categories", "[formats]")
{
    auto t = Loader::load((kJsonFixtures / "timeline_times_sizes.json").string());
    const TraceEvents& ev = t->snapshot.devices.at(0).trace;
    REQUIRE(ev.category.size() == ev.count());
    bool sawParameter = false;
    for (uint8_t c : ev.category)
        sawParameter = sawParameter || c == static_cast<uint8_t>(TensorCategory::Parameter);
    CHECK(sawParameter);
    CHECK(categoryName(TensorCategory::OptimizerState) == std::string("OPTIMIZER_STATE"));
    CHECK(categoryFromName("autograd_detail") == TensorCategory::AutogradDetail);
}

TEST_CASE("Corrupt JSON inputs give clear errors", "[formats][errors]")
{
    CHECK_THAT(loadError("{\"traceEvents\": [{\"ph\": \"i\", \"name\": \"[memory]\""),
               Catch::Contains("t.json: byte ") && Catch::Contains("invalid JSON"));
    CHECK_THAT(loadError("{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"[memory]\",\"ts\":1,\"args\":{\"Bytes\":\"x\"}}]}"),
               Catch::Contains("traceEvents[0].args.Bytes: expected an integer"));
    CHECK_THAT(loadError("{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"[memory]\",\"args\":{\"Bytes\":1}}]}"),
               Catch::Contains("traceEvents[0].ts"));
    CHECK_THAT(loadError("{\"segments\": [{\"device\": 0, \"blocks\": [{\"size\": \"big\"}]}]}"),
               Catch::Contains("segments[0].blocks[0].size: expected an integer, found str"));
    CHECK_THAT(loadError("{\"device_traces\": [[{\"action\": \"alloc\", \"addr\": 1, \"size\": []}]]}"),
               Catch::Contains("device_traces[0][0].size"));
    CHECK_THAT(loadError("[[1, 2, 3, 4], [1, 2, 3]]"), Catch::Contains("[1]: expected a row"));
    CHECK_THAT(loadError("[[1, 9, 3, 4]]"), Catch::Contains("[0][1]: expected an action 1..4"));
    CHECK_THAT(loadError("[[1], [[0, 1, 2]]]"), Catch::Contains("[1][0]: expected a row of 9 ints"));
    CHECK_THAT(loadError("{\"hello\": 1}"), Catch::Contains("unrecognised JSON") && Catch::Contains("{hello}"));
    CHECK_THAT(loadError("[]"), Catch::Contains("an empty list"));
    CHECK_THAT(loadError("<html><body><img src='data:image/png;base64,iVBOR'></body></html>"),
               Catch::Contains("only a picture"));
}

namespace {

/// `v` as a protocol-4 pickle, the way `pickle.dumps` writes the same dict: the pickle
/// and the JSON text of one document, so the two snapshot imports can be compared.
void encodePickle(test::PickleBuilder& p, const nlohmann::json& v)
{
    switch (v.type()) {
    case nlohmann::json::value_t::null: p.op('N'); break;
    case nlohmann::json::value_t::boolean: p.op(v.get<bool>() ? 0x88 : 0x89); break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: {
        const int64_t i = v.get<int64_t>();
        if (i >= INT32_MIN && i <= INT32_MAX) {
            p.binint(static_cast<int32_t>(i));
        } else {
            std::vector<uint8_t> le;
            for (int k = 0; k < 8; ++k)
                le.push_back(uint8_t(uint64_t(i) >> (8 * k)));
            p.long1(le);
        }
        break;
    }
    case nlohmann::json::value_t::string: p.str(v.get<std::string>()); break;
    case nlohmann::json::value_t::array:
        p.emptyList();
        if (!v.empty()) {
            p.mark();
            for (const auto& item : v)
                encodePickle(p, item);
            p.appends();
        }
        break;
    case nlohmann::json::value_t::object:
        p.emptyDict();
        if (!v.empty()) {
            p.mark();
            for (auto it = v.begin(); it != v.end(); ++it) {
                p.str(it.key());
                encodePickle(p, it.value());
            }
            p.setitems();
        }
        break;
    default: FAIL("no pickle for " << v.dump());
    }
}

std::shared_ptr<const LoadedTrace> loadAsPickle(const nlohmann::json& doc)
{
    test::PickleBuilder p;
    p.proto(4);
    encodePickle(p, doc);
    p.stop();
    return Loader::loadBytes("same.pickle", p.b);
}

/// A stack by its frames' text: the two imports intern frames in a different order.
std::vector<std::string> stackText(const FrameTable& f, uint32_t id)
{
    std::vector<std::string> out;
    for (uint32_t frame : f.stack(id))
        out.push_back(f.formatFrame(frame));
    return out;
}

template <class Pairs>
std::vector<std::pair<uint32_t, std::string>> stringsOf(const FrameTable& f, const Pairs& sparse)
{
    std::vector<std::pair<uint32_t, std::string>> out;
    for (auto [event, id] : sparse)
        out.emplace_back(event, std::string(f.strings().get(id)));
    return out;
}

/// Every field of the two models, stacks and strings by their text.
void requireSameModel(const Snapshot& a, const Snapshot& b)
{
    CHECK(a.schemaEra == b.schemaEra);
    CHECK(a.allocatorSettings == b.allocatorSettings);
    CHECK(a.runConfig == b.runConfig);
    CHECK(a.notes == b.notes);
    REQUIRE(a.annotations.size() == b.annotations.size());
    for (size_t i = 0; i < a.annotations.size(); ++i) {
        CHECK(a.annotations[i].name == b.annotations[i].name);
        CHECK(a.annotations[i].start == b.annotations[i].start);
        CHECK(a.annotations[i].device == b.annotations[i].device);
        CHECK(a.annotations[i].timeUs == b.annotations[i].timeUs);
    }
    REQUIRE(a.devices.size() == b.devices.size());
    for (size_t d = 0; d < a.devices.size(); ++d) {
        INFO("device " << d);
        const DeviceData& x = a.devices[d];
        const DeviceData& y = b.devices[d];
        CHECK(x.device == y.device);
        CHECK(x.actionCounts == y.actionCounts);
        REQUIRE(x.segments.size() == y.segments.size());
        for (size_t i = 0; i < x.segments.size(); ++i) {
            INFO("segment " << i);
            const Segment& s = x.segments[i];
            const Segment& t = y.segments[i];
            CHECK(std::tie(s.device, s.address, s.totalSize, s.allocatedSize, s.activeSize, s.requestedSize, s.stream,
                           s.largePool, s.expandable, s.poolId, s.firstBlock, s.blockCount) ==
                  std::tie(t.device, t.address, t.totalSize, t.allocatedSize, t.activeSize, t.requestedSize, t.stream,
                           t.largePool, t.expandable, t.poolId, t.firstBlock, t.blockCount));
            CHECK(stackText(a.frames, s.stack) == stackText(b.frames, t.stack));
        }
        REQUIRE(x.blocks.size() == y.blocks.size());
        for (size_t i = 0; i < x.blocks.size(); ++i) {
            INFO("block " << i);
            const Block& s = x.blocks[i];
            const Block& t = y.blocks[i];
            CHECK(std::tie(s.address, s.size, s.requestedSize, s.state) ==
                  std::tie(t.address, t.size, t.requestedSize, t.state));
            CHECK(stackText(a.frames, s.stack) == stackText(b.frames, t.stack));
        }
        const TraceEvents& e = x.trace;
        const TraceEvents& f = y.trace;
        CHECK(e.action == f.action);
        CHECK(e.addr == f.addr);
        CHECK(e.size == f.size);
        CHECK(e.streams() == f.streams());
        CHECK(e.timeUs == f.timeUs);
        CHECK(e.anyTime == f.anyTime);
        CHECK(e.deviceFree == f.deviceFree);
        CHECK(e.category == f.category);
        CHECK(stringsOf(a.frames, e.compileContext) == stringsOf(b.frames, f.compileContext));
        CHECK(stringsOf(a.frames, e.userMetadata) == stringsOf(b.frames, f.userMetadata));
        REQUIRE(e.stack.size() == f.stack.size());
        for (size_t i = 0; i < e.stack.size(); ++i)
            CHECK(stackText(a.frames, e.stack[i]) == stackText(b.frames, f.stack[i]));
        REQUIRE(x.ooms.size() == y.ooms.size());
        for (size_t i = 0; i < x.ooms.size(); ++i)
            CHECK(std::tie(x.ooms[i].eventIndex, x.ooms[i].size, x.ooms[i].deviceFree) ==
                  std::tie(y.ooms[i].eventIndex, y.ooms[i].size, y.ooms[i].deviceFree));
    }
}

nlohmann::json frame(const char* file, int line, const char* name)
{
    return {{"filename", file}, {"line", line}, {"name", name}};
}

} // namespace

TEST_CASE("One snapshot as pickle and as JSON imports to the same model", "[formats][pickle]")
{
    using nlohmann::json;
    const json train = json::array({frame("train.py", 10, "step"), frame("model.py", 42, "forward")});
    const json opt = json::array({frame("train.py", 12, "step"), frame("optim.py", 7, "zero_grad")});
    // 2.8-era: two devices (so the pickle's events are copied out of the shared store),
    // pools, expandable segments, blocks with and without addresses, every optional key.
    const json modern = {
        {"segments", json::array({
            {{"device", 0}, {"address", 0x7f0000000000}, {"total_size", 4 << 20}, {"allocated_size", 3 << 20},
             {"active_size", 3 << 20}, {"requested_size", 3 << 20}, {"stream", 7}, {"segment_type", "large"},
             {"is_expandable", true}, {"segment_pool_id", json::array({1, 2})}, {"frames", train},
             {"blocks", json::array({
                 {{"size", 1 << 20}, {"state", "active_allocated"}, {"requested_size", 1000000}, {"frames", train}},
                 {{"size", 2 << 20}, {"state", "active_pending_free"}, {"frames", opt}},
                 {{"address", 0x7f0000300000}, {"size", 1 << 20}, {"state", "inactive"}}})}},
            {{"device", 1}, {"address", 0x7e0000000000}, {"total_size", 2 << 20}, {"segment_type", "small"},
             {"stream", nullptr}, {"blocks", json::array({{{"size", 2 << 20}, {"state", "inactive"}}})}}})},
        {"device_traces", json::array({
            json::array({
                {{"action", "segment_alloc"}, {"addr", 0x7f0000000000}, {"size", 4 << 20}, {"stream", 7},
                 {"time_us", 100}, {"frames", train}},
                {{"action", "alloc"}, {"addr", 0x7f0000000000}, {"size", 1 << 20}, {"stream", 7}, {"time_us", 101},
                 {"frames", train}, {"compile_context", "torch/_dynamo: graph 0"}},
                {{"action", "alloc"}, {"addr", 0x7f0000100000}, {"size", 2 << 20}, {"stream", 7}, {"time_us", 102},
                 {"frames", opt}, {"user_metadata", "step 1"}},
                {{"action", "free_requested"}, {"addr", 0x7f0000100000}, {"size", 2 << 20}, {"stream", 7},
                 {"time_us", 103}, {"frames", opt}},
                {{"action", "oom"}, {"addr", 0}, {"size", int64_t(80) << 30}, {"stream", 7}, {"time_us", 104},
                 {"device_free", 12345678}, {"frames", json::array()}},
                {{"action", "some_future_action"}, {"addr", 1}, {"size", 2}, {"stream", 0}}}),
            json::array(),
            json::array({{{"action", "alloc"}, {"addr", 0x7e0000000000}, {"size", 512}, {"stream", 0},
                          {"time_us", 200}}})})},
        {"allocator_settings", {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}, {"max_split_size", 1024}}},
        {"headroom_config", {{"micro_batch", 8}, {"precision", "bf16"}}},
        {"external_annotations", json::array({
            {{"name", "forward"}, {"stage", "START"}, {"device", 0}, {"time_us", 100}},
            {{"name", "forward"}, {"stage", "END"}, {"device", 0}, {"time_us", 103}}})},
    };
    // 1.13-2.0 era: blocks with a history (the request size and the stack live there, C++
    // frames as pre-formatted strings).
    const json legacy = {
        {"segments", json::array({
            {{"device", 0}, {"address", 4096}, {"total_size", 8192}, {"allocated_size", 4096}, {"active_size", 4096},
             {"stream", 0}, {"segment_type", "small"},
             {"blocks", json::array({
                 {{"size", 4096}, {"state", "active_allocated"},
                  {"history", json::array({{{"addr", 4096}, {"real_size", 4000}, {"frames", train}}})}},
                 {{"size", 4096}, {"state", "inactive"},
                  {"history", json::array({{{"addr", 8192}, {"real_size", 10},
                                            {"cpp_frames", json::array({"c10::alloc", "at::empty"})}}})}}})}}})},
        {"device_traces", json::array({json::array({{{"action", "alloc"}, {"addr", 4096}, {"size", 4096}}}),
                                       json::array()})},
    };
    // 2.2-era, one device: the pickle's single trace takes the whole event store, which once
    // hid its time_us from the era ladder ("2.0+" from the pickle, "2.2+" from the JSON).
    const json single = {
        {"segments", json::array({{{"device", 0}, {"address", 4096}, {"total_size", 8192}, {"stream", 0},
                                   {"blocks", json::array({{{"size", 8192}, {"state", "inactive"}}})}}})},
        {"device_traces", json::array({json::array({
            {{"action", "alloc"}, {"addr", 4096}, {"size", 4096}, {"stream", 0}, {"time_us", 10}},
            {{"action", "free_completed"}, {"addr", 4096}, {"size", 4096}, {"stream", 0}, {"time_us", 11}}})})},
    };
    // 1.12 and older: a bare list of segments.
    const json bare = json::array({{{"device", 0}, {"address", 4096}, {"total_size", 4096},
                                    {"blocks", json::array({{{"size", 4096}, {"state", "active_allocated"}}})}}});

    for (const auto& [what, doc, era] : {std::tuple{"2.8", modern, "2.8+ (compile_context / user_metadata)"},
                                         std::tuple{"legacy", legacy, "1.13-2.0 (blocks with history)"},
                                         std::tuple{"2.2 single device", single, "2.2+ (time_us)"},
                                         std::tuple{"bare list", bare, "1.12 or older (a bare list of segments)"}}) {
        INFO(what);
        auto fromPickle = loadAsPickle(doc);
        auto fromJson = loadText(doc.dump(), "same.json");
        CHECK(fromPickle->snapshot.schemaEra == era);
        CHECK(fromJson->snapshot.schemaEra == era);
        CHECK(fromJson->snapshot.devices.front().sourceFormat == "snapshot (JSON)");
        requireSameModel(fromPickle->snapshot, fromJson->snapshot);
    }
}

TEST_CASE("The JSON integer rules and their limits", "[formats][errors]")
{
    using nlohmann::json;
    using S = JsonInt::Status;
    auto status = [](const json& v, const JsonIntRule& r) { return jsonInteger(v, r).status; };
    auto value = [](const json& v, const JsonIntRule& r) { return jsonInteger(v, r).value; };
    const int64_t lim = int64_t(1) << 62;
    for (const JsonIntRule& r : {jsonrules::kChromeTrace, jsonrules::kProfileTimeline}) {
        // Exactly the limit passes, one past it does not, in both signs and every spelling.
        CHECK(value(json(lim), r) == lim);
        CHECK(value(json(-lim), r) == -lim);
        CHECK(status(json(lim + 1), r) == S::OutOfRange);
        CHECK(status(json(-lim - 1), r) == S::OutOfRange);
        CHECK(status(json(uint64_t(1) << 63), r) == S::OutOfRange);
        CHECK(status(json(INT64_MIN), r) == S::OutOfRange);
        CHECK(value(json(double(lim)), r) == lim);
        CHECK(status(json(1e19), r) == S::OutOfRange);
        CHECK(status(json(-1e308), r) == S::OutOfRange);
        CHECK(status(json(true), r) == S::NotAnInteger);
        CHECK(status(json(nullptr), r) == S::NotAnInteger);
        CHECK(status(json::array(), r) == S::NotAnInteger);
    }
    // Kineto: fractions round, quoted integers are read (and range-checked).
    CHECK(value(json(2.5), jsonrules::kChromeTrace) == 3);
    CHECK(value(json("-42"), jsonrules::kChromeTrace) == -42);
    CHECK(status(json("4611686018427387905"), jsonrules::kChromeTrace) == S::OutOfRange);
    CHECK(status(json("12 bytes"), jsonrules::kChromeTrace) == S::NotAnInteger);
    CHECK(status(json("99999999999999999999"), jsonrules::kChromeTrace) == S::NotAnInteger);
    // Profiler timelines: neither.
    CHECK(status(json(2.5), jsonrules::kProfileTimeline) == S::NotAnInteger);
    CHECK(status(json("42"), jsonrules::kProfileTimeline) == S::NotAnInteger);
    // Snapshots: every 64-bit pattern, as the pickle reader takes it; bools; integral floats
    // inside int64 only (never a cast out of range).
    const JsonIntRule& snap = jsonrules::kSnapshot;
    CHECK(value(json(UINT64_MAX), snap) == -1);
    CHECK(value(json(INT64_MIN), snap) == INT64_MIN);
    CHECK(value(json(true), snap) == 1);
    CHECK(value(json(-9223372036854775808.0), snap) == INT64_MIN);
    CHECK(status(json(9223372036854775808.0), snap) == S::NotAnInteger);
    CHECK(status(json(2.6e101), snap) == S::OutOfRange);
    CHECK(status(json(1.5), snap) == S::NotAnInteger);
    CHECK(status(json("1"), snap) == S::NotAnInteger);

    // The throwing form names the file, the path and what was expected.
    CHECK_THROWS_WITH(jsonIntegerAt(json(lim + 1), jsonrules::kProfileTimeline, "t.json", "[3][2]"),
                      "t.json: [3][2]: number 4611686018427387905 is out of range");
    CHECK_THROWS_WITH(jsonIntegerAt(json::object(), jsonrules::kChromeTrace, "t.json", "traceEvents[0].args.Bytes"),
                      Catch::Contains("t.json") &&
                          Catch::Contains("traceEvents[0].args.Bytes: expected an integer, found object"));
    // Through the importers: the limit holds for Chrome traces and timelines, not for snapshots.
    CHECK_THAT(loadError("[[1, 2, 4611686018427387905, 1]]"), Catch::Contains("[0][2]: number") &&
                                                                   Catch::Contains("is out of range"));
    CHECK_THAT(loadError("{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"[memory]\",\"ts\":1,"
                         "\"args\":{\"Bytes\":-4611686018427387905}}]}"),
               Catch::Contains("traceEvents[0].args.Bytes: number -4611686018427387905 is out of range"));
    CHECK_THAT(loadError("{\"device_traces\": [[{\"action\": \"alloc\", \"addr\": 1, \"size\": 1.5}]]}"),
               Catch::Contains("device_traces[0][0].size: expected an integer, found float"));
}

TEST_CASE("Fake addresses pair a free with the latest live allocation of its key", "[formats]")
{
    FakeAddresses fake;
    const uint64_t a = fake.alloc({4096, 0});
    const uint64_t b = fake.alloc({4096, 0});
    const uint64_t c = fake.alloc({4096, 1}); // same size, other category
    CHECK(a == FakeAddresses::kBase);
    CHECK(b == a + FakeAddresses::kStride);
    CHECK(c == b + FakeAddresses::kStride);
    CHECK(fake.free({4096, 0}) == b); // latest first
    CHECK(fake.free({4096, 1}) == c);
    CHECK(fake.free({4096, 0}) == a);
    // Freed but never allocated in the window: a fresh address, never one in use.
    const uint64_t orphan = fake.free({4096, 0});
    CHECK(orphan == c + FakeAddresses::kStride);
    // A tensor that keeps its address (a re-categorised one) is paired at that address.
    CHECK(fake.alloc({8, 2}, a) == a);
    CHECK(fake.free({8, 2}) == a);
    CHECK(fake.fresh() == orphan + FakeAddresses::kStride);
}

TEST_CASE("A raw timeline without addresses pairs by size and category", "[formats]")
{
    // CREATE 100 (cat 1), CREATE 100 (cat 2), DESTROY 100 (cat 1), INCREMENT_VERSION -100 cat 2
    // then +100 cat 3 (same tensor: same address), DESTROY 100 cat 3.
    auto t = loadText("[[1000, 2, 100, 1], [2000, 2, 100, 2], [3000, 4, -100, 1], [4000, 3, -100, 2],"
                      " [4000, 3, 100, 3], [5000, 4, -100, 3]]");
    const TraceEvents& ev = t->snapshot.devices.at(0).trace;
    REQUIRE(ev.count() == 6);
    const uint64_t first = FakeAddresses::kBase, second = first + FakeAddresses::kStride;
    CHECK(ev.addr == std::vector<uint64_t>{first, second, first, second, second, second});
    CHECK(ev.action == std::vector<TraceAction>{TraceAction::Alloc, TraceAction::Alloc, TraceAction::Free,
                                                TraceAction::Free, TraceAction::Alloc, TraceAction::Free});
    CHECK(ev.totalAllocated == std::vector<int64_t>{100, 200, 100, 0, 100, 0});
}
