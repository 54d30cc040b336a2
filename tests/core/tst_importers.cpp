// SPDX-License-Identifier: MIT
// The importers called directly, without the loader's format detection: the model each
// one builds from a small document written here, and the LoadError it throws for bad
// input (the file, no byte offset, the path inside the document and what was expected).
#include "core/io/chrometraceimporter.h"
#include "core/io/fakeaddresses.h"
#include "core/io/jsonsnapshotimporter.h"
#include "core/io/picklereader.h"
#include "core/io/profiletimelineimporter.h"
#include "core/io/snapshotimporter.h"
#include "core/util/loaderror.h"
#include "picklebuilder.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

using namespace headroom;
using headroom::test::PickleBuilder;
using json = nlohmann::json;

namespace {

/// The LoadError `f` throws for a snapshot named `file`, if any.
std::optional<LoadError> errorOf(const std::function<void(Snapshot&)>& f, const std::string& file = "t.json")
{
    Snapshot snap;
    snap.path = file;
    try {
        f(snap);
    } catch (const LoadError& e) {
        return e;
    }
    return std::nullopt;
}

/// What an importer reports for bad input: the detail, when the message names the file and
/// carries no byte offset (a document path says where instead); else what is wrong with it.
/// No assertions here: callers compare the result inside CHECK.
std::string documentError(const std::function<void(Snapshot&)>& f, const std::string& file = "t.json")
{
    const auto e = errorOf(f, file);
    if (!e)
        return "no LoadError";
    if (e->file() != file || e->offset() != LoadError::kNoOffset || std::string(e->what()) != file + ": " + e->detail())
        return std::string("wrong envelope: ") + e->what();
    return e->detail();
}

/// The same document as a pickle, so the pickle importer can be fed what the JSON test reads.
void pickleValue(PickleBuilder& p, const json& v)
{
    if (v.is_object()) {
        p.emptyDict();
        if (v.empty())
            return;
        p.mark();
        for (auto it = v.begin(); it != v.end(); ++it) {
            p.str(it.key());
            pickleValue(p, it.value());
        }
        p.setitems();
    } else if (v.is_array()) {
        p.emptyList();
        if (v.empty())
            return;
        p.mark();
        for (const json& item : v)
            pickleValue(p, item);
        p.appends();
    } else if (v.is_string()) {
        p.str(v.get<std::string>());
    } else if (v.is_boolean()) {
        p.op(v.get<bool>() ? 0x88 : 0x89);
    } else if (v.is_null()) {
        p.op('N');
    } else {
        const int64_t i = v.get<int64_t>();
        if (i >= INT32_MIN && i <= INT32_MAX) {
            p.binint(static_cast<int32_t>(i));
        } else {
            std::vector<uint8_t> le;
            for (int k = 0; k < 8; ++k)
                le.push_back(static_cast<uint8_t>(static_cast<uint64_t>(i) >> (8 * k)));
            p.long1(le);
        }
    }
}

std::vector<uint8_t> pickleOf(const json& v)
{
    PickleBuilder p;
    p.proto(4);
    pickleValue(p, v);
    p.stop();
    return p.b;
}

/// Parses and imports `bytes` as SnapshotImporter's callers do (the loader).
void importPickle(const std::vector<uint8_t>& bytes, Snapshot& snap)
{
    PickleDocument doc(snap.frames);
    PickleReader::parse(doc, bytes.data(), bytes.size(), snap.path, {});
    SnapshotImporter::import(doc, snap);
}

/// Two devices: 0 known only from its segment, 1 only from its trace (an OOM with device_free).
const json kSnapshot = json::parse(R"({
  "segments": [{"device": 0, "address": 4096, "total_size": 2048, "segment_type": "small",
                "blocks": [{"size": 512, "state": "active_allocated", "requested_size": 500},
                           {"size": 1536, "state": "inactive"}]}],
  "device_traces": [[],
                    [{"action": "alloc", "addr": 8192, "size": 512, "time_us": 10, "category": "activation",
                      "frames": [{"filename": "model.py", "line": 3, "name": "forward"}]},
                     {"action": "oom", "size": 99, "device_free": 7, "time_us": 11},
                     {"action": "free_completed", "addr": 8192, "size": 512, "time_us": 12}]]
})");

void checkSnapshotModel(const Snapshot& snap)
{
    REQUIRE(snap.devices.size() == 2);
    const DeviceData& d0 = snap.devices[0];
    CHECK(d0.device == 0);
    CHECK(d0.trace.count() == 0); // an empty trace list adds nothing
    REQUIRE(d0.segments.size() == 1);
    CHECK(d0.segments[0].totalSize == 2048);
    CHECK_FALSE(d0.segments[0].largePool);
    REQUIRE(d0.blocks.size() == 2);
    CHECK(d0.blocks[0].address == 4096);
    CHECK(d0.blocks[1].address == 4096 + 512); // blocks without an address follow each other
    CHECK(d0.blocks[0].requestedSize == 500);
    CHECK(d0.blocks[1].requestedSize == 1536); // none given: the block's size
    CHECK(d0.blocks[0].state == BlockState::ActiveAllocated);
    CHECK(d0.blocks[1].state == BlockState::Inactive);

    const DeviceData& d1 = snap.devices[1];
    CHECK(d1.device == 1);
    REQUIRE(d1.trace.count() == 3);
    CHECK(d1.trace.action[0] == TraceAction::Alloc);
    CHECK(d1.trace.action[1] == TraceAction::Oom);
    CHECK(d1.trace.action[2] == TraceAction::FreeCompleted);
    CHECK(d1.trace.addr[2] == 8192);
    CHECK(d1.trace.timeUs[2] == 12);
    CHECK(d1.trace.anyTime);
    REQUIRE(d1.ooms.size() == 1);
    CHECK(d1.ooms[0].eventIndex == 1);
    CHECK(d1.ooms[0].size == 99);
    CHECK(d1.ooms[0].deviceFree == 7);
    CHECK(d1.actionCounts.at("alloc") == 1);
    const auto stack = snap.frames.stack(d1.trace.stack[0]);
    REQUIRE(stack.size() == 1);
    CHECK(snap.frames.formatFrame(stack[0]) == "model.py:3:forward");
    CHECK(d1.trace.stack[1] == FrameTable::kEmptyStack);
    CHECK(snap.schemaEra == "2.2+ (time_us)");
}

} // namespace

TEST_CASE("JsonSnapshotImporter accepts snapshot dicts only", "[importers]")
{
    CHECK(JsonSnapshotImporter::accepts(json::parse(R"({"segments": []})")));
    CHECK(JsonSnapshotImporter::accepts(json::parse(R"({"device_traces": []})")));
    CHECK_FALSE(JsonSnapshotImporter::accepts(json::parse(R"({"traceEvents": []})")));
    CHECK_FALSE(JsonSnapshotImporter::accepts(json::parse(R"([{"device": 0}])"))); // the loader's fallback
    CHECK_FALSE(JsonSnapshotImporter::accepts(json::parse("3")));
}

TEST_CASE("JsonSnapshotImporter builds the snapshot model", "[importers]")
{
    Snapshot snap;
    snap.path = "t.json";
    JsonSnapshotImporter::import(kSnapshot, snap);
    checkSnapshotModel(snap);
    for (const DeviceData& d : snap.devices) {
        CHECK(d.sourceFormat == "snapshot (JSON)");
        CHECK(d.sourceFile == "t.json");
    }
    // `_profile_to_snapshot`'s exact category, per entry; entries without one are unknown.
    CHECK(snap.devices[1].trace.category ==
          std::vector<uint8_t>{uint8_t(TensorCategory::Activation), uint8_t(TensorCategory::Unknown),
                               uint8_t(TensorCategory::Unknown)});
    CHECK(snap.devices[0].trace.category.empty());
}

TEST_CASE("JsonSnapshotImporter: bare segment lists, empty documents, JSON bools", "[importers]")
{
    Snapshot bare;
    JsonSnapshotImporter::import(json::parse(R"([{"device": 2, "total_size": 10, "is_expandable": true}])"), bare);
    CHECK(bare.schemaEra == "1.12 or older (a bare list of segments)");
    REQUIRE(bare.devices.size() == 1);
    CHECK(bare.devices[0].device == 2);
    CHECK(bare.devices[0].segments[0].expandable);

    Snapshot empty;
    JsonSnapshotImporter::import(json::parse(R"({"segments": [], "device_traces": []})"), empty);
    CHECK(empty.devices.empty());
    CHECK(empty.schemaEra == "2.0+");

    Snapshot bools; // a Python bool is an int: json.dump writes it as true/false
    JsonSnapshotImporter::import(json::parse(R"({"device_traces": [[{"action": "alloc", "stream": true}]]})"), bools);
    CHECK(bools.devices.at(0).trace.streamAt(0) == 1);
}

TEST_CASE("JsonSnapshotImporter: bad input names the JSON path and what was expected", "[importers]")
{
    auto import = [](const char* text) {
        return [text](Snapshot& s) { JsonSnapshotImporter::import(json::parse(text), s); };
    };
    CHECK(documentError(import(R"({"device_traces": [[{"action": "alloc"}, {"action": "alloc", "size": "big"}]]})")) ==
          "device_traces[0][1].size: expected an integer, found str");
    CHECK(documentError(import(R"({"device_traces": [[{"size": 1}]]})")) ==
          "device_traces[0][0]: expected a trace entry dict with an 'action' string, found dict");
    CHECK(documentError(import(R"({"device_traces": [[{"action": "alloc", "frames": 5}]]})")) ==
          "device_traces[0][0].frames: expected a list of frames {filename, line, name}, found int");
    CHECK(documentError(import(R"({"device_traces": [[{"action": "alloc", "frames": [7]}]]})")) ==
          "device_traces[0][0].frames[0]: expected a frame {filename, line, name}, found int");
    CHECK(documentError(import(R"({"device_traces": {}})")) ==
          "device_traces: expected a list with one trace list per device, found dict");
    CHECK(documentError(import(R"({"segments": [{"blocks": [{"size": 1, "state": 5}]}]})")) ==
          "segments[0].blocks[0].state: expected a string, found int");
    CHECK(documentError(import(R"({"segments": [{"device": -1}]})")) ==
          "segments[0].device: expected a device ordinal, found -1");
    CHECK(documentError(import(R"({"segments": [3]})")) == "segments[0]: expected a segment dict, found int");
    CHECK(documentError(import(R"({"version": 1, "other": 2})")) ==
          "top level: not a memory snapshot: expected a dict with 'segments' and 'device_traces', found a dict "
          "with keys {other, version}");
    CHECK(documentError(import(R"("text")")) ==
          "top level: not a memory snapshot: expected a dict or a list of segments, found str");
}

TEST_CASE("SnapshotImporter reads the pickle of the same snapshot into the same model", "[importers]")
{
    Snapshot snap;
    snap.path = "t.pickle";
    const auto bytes = pickleOf(kSnapshot);
    importPickle(bytes, snap);
    checkSnapshotModel(snap);
    CHECK(snap.devices[0].sourceFormat.empty()); // "" is the snapshot itself
}

TEST_CASE("SnapshotImporter: each device's trace takes its own entries, OOMs and device_free", "[importers]")
{
    // The reader stores every entry of the file in one array; a device must get only its
    // own, with the sparse device_free renumbered to its own event indices.
    const json doc = json::parse(R"({"segments": [], "device_traces": [
        [{"action": "alloc", "addr": 4096, "size": 512}, {"action": "oom", "size": 99, "device_free": 7}],
        [{"action": "oom", "size": 55, "device_free": 3}, {"action": "alloc", "addr": 8192, "size": 64},
         {"action": "free_requested", "addr": 8192, "size": 64, "time_us": 5}]]})");
    Snapshot snap;
    snap.path = "two.pickle";
    const auto bytes = pickleOf(doc);
    importPickle(bytes, snap);
    REQUIRE(snap.devices.size() == 2);
    const DeviceData& d0 = snap.devices[0];
    const DeviceData& d1 = snap.devices[1];
    REQUIRE(d0.trace.count() == 2);
    REQUIRE(d1.trace.count() == 3);
    CHECK(d0.trace.addr[0] == 4096);
    CHECK(d1.trace.addr[1] == 8192);
    CHECK_FALSE(d0.trace.anyTime); // the time is device 1's
    CHECK(d1.trace.anyTime);
    REQUIRE(d0.ooms.size() == 1);
    CHECK(d0.ooms[0].eventIndex == 1);
    CHECK(d0.ooms[0].deviceFree == 7);
    REQUIRE(d1.ooms.size() == 1);
    CHECK(d1.ooms[0].eventIndex == 0);
    CHECK(d1.ooms[0].size == 55);
    CHECK(d1.ooms[0].deviceFree == 3);
    CHECK(d1.trace.deviceFree == std::vector<std::pair<uint32_t, int64_t>>{{0, 3}});
    CHECK(d1.actionCounts.at("free_requested") == 1);
    CHECK(d1.actionCounts.count("alloc") == 1);
    CHECK(d0.actionCounts.count("free_requested") == 0);
}

TEST_CASE("SnapshotImporter: bad input names the path inside the pickle", "[importers]")
{
    auto import = [](const char* text) {
        return [bytes = pickleOf(json::parse(text))](Snapshot& s) { importPickle(bytes, s); };
    };
    CHECK(documentError(import(R"({"segments": [{"blocks": [{"size": "big"}]}]})"), "t.pickle") ==
          "segments[0].blocks[0].size: expected an integer, found str");
    CHECK(documentError(import(R"({"device_traces": [[5]]})"), "t.pickle") ==
          "device_traces[0][0]: expected a trace entry dict with an 'action' string, found int");
    CHECK(documentError(import("7"), "t.pickle") ==
          "top level: not a memory snapshot: expected a dict or a list of segments, found int");
    // A syntax error is the reader's: it has a byte offset.
    const std::vector<uint8_t> truncated = {0x80, 0x04, '}', '('};
    const auto e = errorOf([&](Snapshot& s) { importPickle(truncated, s); }, "t.pickle");
    REQUIRE(e.has_value());
    CHECK(e->offset() >= 0);
    CHECK(e->file() == "t.pickle");
}

TEST_CASE("ChromeTraceImporter: what it accepts and which events it keeps", "[importers]")
{
    CHECK(ChromeTraceImporter::accepts(json::parse(R"({"traceEvents": []})")));
    CHECK(ChromeTraceImporter::accepts(json::parse(R"([{"ph": "X", "name": "a"}])")));
    CHECK_FALSE(ChromeTraceImporter::accepts(json::parse("[]")));
    CHECK_FALSE(ChromeTraceImporter::accepts(json::parse(R"({"segments": []})")));
    CHECK_FALSE(ChromeTraceImporter::accepts(json::parse(R"([[1, 2, 3, 4]])")));

    CHECK(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "i", "name": "[memory]"})")));
    CHECK(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "i", "name": "[OutOfMemory]"})")));
    CHECK(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "X", "name": "ProfilerStep#3"})")));
    CHECK(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "X", "name": "fwd", "cat": "user_annotation"})")));
    CHECK(ChromeTraceImporter::keepEvent(json::parse(R"({"traceEvents": []})"))); // no "ph": not a trace event
    CHECK_FALSE(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "X", "name": "aten::mm", "cat": "cpu_op"})")));
    CHECK_FALSE(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "f", "name": "ProfilerStep#3"})")));
    CHECK_FALSE(ChromeTraceImporter::keepEvent(json::parse(R"({"ph": "X", "name": 5})")));
}

TEST_CASE("ChromeTraceImporter: devices, event order, the file's totals and time windows", "[importers]")
{
    const json trace = json::parse(R"({
      "schemaVersion": 1, "baseTimeNanoseconds": 1000000, "distributedInfo": {"rank": 3},
      "traceEvents": [
        {"ph": "i", "name": "[memory]", "ts": 20, "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096,
         "Bytes": -100, "Total Allocated": 50, "Total Reserved": 2048, "Ev Idx": 1}},
        {"ph": "i", "name": "[memory]", "ts": 10, "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096,
         "Bytes": 100, "Total Allocated": 150, "Total Reserved": 2048, "Ev Idx": 9}},
        {"ph": "i", "name": "[memory]", "ts": 10, "args": {"Device Type": 1, "Device Id": 0, "Addr": 8192,
         "Bytes": 50, "Total Allocated": 50, "Total Reserved": 2048, "Ev Idx": 3}},
        {"ph": "i", "name": "[memory]", "ts": 15, "args": {"Device Type": 0, "Bytes": 64,
         "Total Allocated": 64, "Total Reserved": 0}},
        {"ph": "i", "name": "[OutOfMemory]", "ts": 25, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 4096}},
        {"ph": "X", "name": "ProfilerStep#1", "ts": 5, "dur": 30},
        {"ph": "X", "name": "## forward ##", "cat": "user_annotation", "ts": 8.5, "dur": 2, "tid": 7},
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 9, "dur": 1},
        5
      ]})");
    Snapshot snap;
    snap.path = "t.json";
    ChromeTraceImporter::import(trace, snap);
    CHECK(snap.format == "Chrome trace (JSON)");
    CHECK(snap.schemaEra == "Kineto trace schema 1");
    REQUIRE(snap.devices.size() == 2);

    const DeviceData& host = snap.devices[0]; // sorted by device: host memory is -1
    CHECK(host.device == -1);
    CHECK(host.deviceType == "cpu");
    CHECK(host.trace.count() == 1);

    const DeviceData& gpu = snap.devices[1];
    CHECK(gpu.device == 0);
    CHECK(gpu.deviceType == "cuda");
    CHECK(gpu.rank == 3);
    CHECK(gpu.sourceFormat == "chrome trace");
    CHECK_FALSE(gpu.relativeCurve);
    REQUIRE(gpu.trace.count() == 4);
    // Same time stamp: by Ev Idx, not by file order.
    CHECK(gpu.trace.addr[0] == 8192);
    CHECK(gpu.trace.addr[1] == 4096);
    CHECK(gpu.trace.action[2] == TraceAction::Free);
    CHECK(gpu.trace.size[2] == 100); // a free's size is positive
    CHECK(gpu.trace.action[3] == TraceAction::Oom);
    CHECK(gpu.trace.timeUs[0] == 1010); // baseTimeNanoseconds + ts
    CHECK(gpu.trace.timeUs[2] == 1020);
    CHECK(gpu.trace.totalAllocated == std::vector<int64_t>{50, 150, 50, 50}); // an OOM keeps the last total
    CHECK(gpu.trace.totalReserved == std::vector<int64_t>(4, 2048));
    REQUIRE(gpu.ooms.size() == 1);
    CHECK(gpu.ooms[0].eventIndex == 3);
    CHECK(gpu.ooms[0].size == 4096);
    CHECK(gpu.actionCounts.at("alloc") == 2);
    CHECK(gpu.actionCounts.at("free") == 1);

    REQUIRE(snap.timeWindows.size() == 2); // aten::mm is no window
    CHECK(snap.timeWindows[0].kind == TimeWindowKind::ProfilerStep);
    CHECK(snap.timeWindows[0].startUs == 1005);
    CHECK(snap.timeWindows[0].endUs == 1035);
    CHECK(snap.timeWindows[1].kind == TimeWindowKind::UserAnnotation);
    CHECK(snap.timeWindows[1].startUs == 1008); // 8.5 µs after the base, whole µs
    CHECK(snap.timeWindows[1].endUs == 1010);
    CHECK(snap.timeWindows[1].tid == 7);
}

TEST_CASE("ChromeTraceImporter: without totals the curve is relative; without Addr frees pair by size",
          "[importers]")
{
    // A bare array of events (the other accepted form), PyTorch 1.9-style: Bytes only.
    const json trace = json::parse(R"([
        {"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": -100}},
        {"ph": "i", "name": "[memory]", "ts": 2, "args": {"Bytes": 100}},
        {"ph": "i", "name": "[memory]", "ts": 3, "args": {"Bytes": 100}},
        {"ph": "i", "name": "[memory]", "ts": 4, "args": {"Bytes": -100}},
        {"ph": "i", "name": "[memory]", "ts": 5, "args": {"Bytes": "28"}}
    ])");
    Snapshot snap;
    ChromeTraceImporter::import(trace, snap);
    REQUIRE(snap.devices.size() == 1);
    const DeviceData& d = snap.devices[0];
    CHECK(d.device == 0); // no Device Type, no Device Id: the first GPU
    CHECK(d.rank == -1);
    CHECK(d.relativeCurve);
    // The running sum -100, 0, 100, 0, 28 raised so that it never goes below zero.
    CHECK(d.trace.totalAllocated == std::vector<int64_t>{0, 100, 200, 100, 128});
    CHECK(d.trace.totalReserved.empty());
    // The free takes the latest live allocation of its size; the first free a fresh address.
    CHECK(d.trace.addr[3] == d.trace.addr[2]);
    CHECK(d.trace.addr[1] != d.trace.addr[2]);
    CHECK(d.trace.addr[0] != d.trace.addr[1]);
    CHECK(d.trace.addr[0] >= FakeAddresses::kBase);
    CHECK(d.trace.size[4] == 28); // Kineto quotes some integers
    bool relativeNote = false, reservedNote = false;
    for (const std::string& n : snap.notes) {
        relativeNote |= n.find("no 'Total Allocated'") != std::string::npos;
        reservedNote |= n.find("no 'Total Reserved'") != std::string::npos;
    }
    CHECK(relativeNote);
    CHECK(reservedNote);
}

TEST_CASE("ChromeTraceImporter: a trace without memory events says how to record one", "[importers]")
{
    Snapshot snap;
    ChromeTraceImporter::import(json::parse(R"({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1}]})"), snap);
    CHECK(snap.devices.empty());
    REQUIRE(snap.notes.size() == 1);
    CHECK(snap.notes[0].find("profile_memory=True") != std::string::npos);
    CHECK(snap.schemaEra == "Kineto trace");
}

TEST_CASE("ChromeTraceImporter: bad input names the event and what was expected", "[importers]")
{
    auto import = [](const char* text) {
        return [text](Snapshot& s) { ChromeTraceImporter::import(json::parse(text), s); };
    };
    CHECK(documentError(import(R"({"traceEvents": 5})")) == "traceEvents: expected a list of trace events, found number");
    CHECK(documentError(import(R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1}]})")) ==
          "traceEvents[0].args: expected the memory event's args {Device Type, Device Id, Bytes, ...}");
    CHECK(documentError(import(R"({"traceEvents": [1, {"ph": "i", "name": "[memory]", "ts": 1, "args": {}}]})")) ==
          "traceEvents[1].args.Bytes: expected the allocation size, found nothing");
    CHECK(documentError(import(R"({"traceEvents": [{"ph": "i", "name": "[memory]", "args": {"Bytes": 1}}]})")) ==
          "traceEvents[0].ts: expected a time stamp, found nothing");
    CHECK(documentError(import(R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": "x", "args": {"Bytes": 1}}]})")) ==
          "traceEvents[0].ts: expected a time in µs, found string");
    CHECK(documentError(import(R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": "ab"}}]})")) ==
          "traceEvents[0].args.Bytes: expected an integer, found string");
    // Bytes are negated and summed: more than 2^62 could overflow, so it is refused.
    CHECK(documentError(import(R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": -9223372036854775808}}]})")) ==
          "traceEvents[0].args.Bytes: number -9223372036854775808 is out of range");
    // A time that would overflow int64 nanoseconds.
    CHECK_THAT(documentError(import(R"({"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 1e17}]})")),
               Catch::StartsWith("traceEvents[0].ts: time ") && Catch::EndsWith(" us is out of range"));
    CHECK(documentError(import(R"({"traceEvents": [{"ph": "X", "name": "ProfilerStep#1"}]})")) ==
          "traceEvents[0].ts: expected a start time, found nothing");
}

TEST_CASE("ProfileTimelineImporter: which form it accepts", "[importers]")
{
    CHECK(ProfileTimelineImporter::acceptsRaw(json::parse("[[1, 2, 3, 4]]")));
    CHECK_FALSE(ProfileTimelineImporter::acceptsRaw(json::parse("[]")));
    CHECK_FALSE(ProfileTimelineImporter::acceptsRaw(json::parse("[[1, 2, 3]]")));
    CHECK_FALSE(ProfileTimelineImporter::acceptsRaw(json::parse(R"([["a", 2, 3, 4]])")));
    CHECK(ProfileTimelineImporter::acceptsTimesSizes(json::parse("[[10], [[0, 1, 2, 3, 4, 5, 6, 7, 8]]]")));
    CHECK(ProfileTimelineImporter::acceptsTimesSizes(json::parse("[[], []]")));
    CHECK_FALSE(ProfileTimelineImporter::acceptsTimesSizes(json::parse("[[10], [5]]")));
    CHECK_FALSE(ProfileTimelineImporter::acceptsTimesSizes(json::parse("[[10], [[0]], []]")));
    CHECK_FALSE(ProfileTimelineImporter::acceptsRaw(json::parse("[[10], [[0, 1, 2, 3, 4, 5, 6, 7, 8]]]")));
}

TEST_CASE("ProfileTimelineImporter: raw rows become events with exact categories and totals", "[importers]")
{
    // [timestamp_ns, action (1 PREEXISTING, 2 CREATE, 3 INCREMENT_VERSION, 4 DESTROY), bytes, category]
    const json rows = json::parse(R"([
        [-1, 1, 1000, 0],
        [5000, 2, 200, 4],
        [6000, 2, 200, 4],
        [7000, 4, -200, 4],
        [8000, 3, -200, 4],
        [8000, 3, 200, 5],
        [9000, 2, 50, 99]
    ])");
    Snapshot snap;
    snap.path = "t.json";
    ProfileTimelineImporter::importRaw(rows, snap);
    REQUIRE(snap.devices.size() == 1);
    const DeviceData& d = snap.devices[0];
    CHECK(d.device == 0);
    CHECK(d.sourceFormat == "memory timeline (raw)");
    CHECK(d.sourceFile == "t.json");
    const TraceEvents& ev = d.trace;
    REQUIRE(ev.count() == 7);
    using A = TraceAction;
    CHECK(ev.action == std::vector<A>{A::Alloc, A::Alloc, A::Alloc, A::Free, A::Free, A::Alloc, A::Alloc});
    // PREEXISTING rows carry t = -1: stamped with the smallest real time, 5 µs.
    CHECK(ev.timeUs == std::vector<int64_t>{5, 5, 6, 7, 8, 8, 9});
    CHECK(ev.totalAllocated == std::vector<int64_t>{1000, 1200, 1400, 1200, 1000, 1200, 1250});
    // Category 99 is no category: unknown.
    CHECK(ev.category == std::vector<uint8_t>{0, 4, 4, 4, 4, 5, 7});
    CHECK(ev.size[3] == 200);
    CHECK(ev.addr[3] == ev.addr[2]); // DESTROY: the latest live tensor of its size and category
    CHECK(ev.addr[4] == ev.addr[1]); // the -n of INCREMENT_VERSION: the one still alive
    CHECK(ev.addr[5] == ev.addr[4]); // its +n: the same tensor, a new category
    CHECK(ev.addr[6] != ev.addr[5]);
    CHECK(ev.anyTime);
    CHECK(d.actionCounts.at("preexisting") == 1);
    CHECK(d.actionCounts.at("create") == 3);
    CHECK(d.actionCounts.at("increment_version") == 2);
    CHECK(d.actionCounts.at("destroy") == 1);

    Snapshot empty;
    ProfileTimelineImporter::importRaw(json::array(), empty);
    REQUIRE(empty.devices.size() == 1);
    CHECK(empty.devices[0].trace.count() == 0);
    CHECK_FALSE(empty.devices[0].trace.anyTime);
}

TEST_CASE("ProfileTimelineImporter: [times, sizes] rows become one band per category", "[importers]")
{
    // Rows: [0, PARAMETER, OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION, GRADIENT, AUTOGRAD_DETAIL, UNKNOWN]
    const json doc = json::parse(R"([[10, 20, 30, 40], [
        [0, 100, 0, 0, 0, 50, 0, 0, 0],
        [0, 100, 0, 0, 0, 20, 30, 0, 0],
        [0, 100, 0, 0, 0, 0, 30, 0, 0],
        [0, 100, 0, 0, 0, 0, 30, 0, 0]
    ]])");
    Snapshot snap;
    ProfileTimelineImporter::importTimesSizes(doc, snap);
    REQUIRE(snap.devices.size() == 1);
    const TraceEvents& ev = snap.devices[0].trace;
    using A = TraceAction;
    // A row without a change adds no event; a band that shrinks comes before one that grows,
    // so no event shows more than the row's total (150).
    CHECK(ev.action == std::vector<A>{A::Alloc, A::Alloc, A::Alloc, A::Alloc, A::Free});
    CHECK(ev.category == std::vector<uint8_t>{0, 4, 4, 5, 4});
    CHECK(ev.totalAllocated == std::vector<int64_t>{100, 150, 120, 150, 130});
    CHECK(ev.timeUs == std::vector<int64_t>{10, 10, 20, 20, 30});
    CHECK(ev.size == std::vector<int64_t>{100, 50, 20, 30, 20}); // a free names what the band held
    const uint64_t activation = ev.addr[1];
    CHECK(ev.addr[2] == activation);
    CHECK(ev.addr[4] == activation);
    CHECK(ev.addr[3] != activation);
    CHECK(snap.devices[0].sourceFormat == "memory timeline");
}

TEST_CASE("ProfileTimelineImporter: bad rows name their index and what was expected", "[importers]")
{
    auto raw = [](const char* text) {
        return [text](Snapshot& s) { ProfileTimelineImporter::importRaw(json::parse(text), s); };
    };
    auto timesSizes = [](const char* text) {
        return [text](Snapshot& s) { ProfileTimelineImporter::importTimesSizes(json::parse(text), s); };
    };
    CHECK(documentError(raw("[[1, 2, 3, 4], [1, 5, 10, 0]]")) ==
          "[1][1]: expected an action 1..4 (PREEXISTING, CREATE, INCREMENT_VERSION, DESTROY), found 5");
    CHECK(documentError(raw("[[1, 2, 3, 4], [1, 2, 3]]")) ==
          "[1]: expected a row [timestamp_ns, action, numbytes, category], found a list of 3");
    CHECK(documentError(raw("[[1, 2, 3, 4], 7]")) ==
          "[1]: expected a row [timestamp_ns, action, numbytes, category], found number");
    CHECK(documentError(raw(R"([[1, 2, "x", 4]])")) == "[0][2]: expected an integer, found string");
    CHECK(documentError(raw("[[1, 2, 4611686018427387905, 4]]")) == "[0][2]: number 4611686018427387905 is out of range");
    CHECK(documentError(timesSizes("[[1, 2], [[0, 0, 0, 0, 0, 0, 0, 0, 0]]]")) ==
          "[1]: expected one sizes row per time (2), found 1");
    CHECK(documentError(timesSizes("[[1], [[0, 1]]]")) ==
          "[1][0]: expected a row of 9 ints [0, PARAMETER, ..., UNKNOWN], found a list of 2");
    CHECK(documentError(timesSizes("[[1], [[0, 0, 0, -5, 0, 0, 0, 0, 0]]]")) ==
          "[1][0][3]: expected a byte count >= 0, found -5");
    CHECK(documentError(timesSizes(R"([["a"], [[0, 0, 0, 0, 0, 0, 0, 0, 0]]])")) ==
          "[0][0]: expected an integer, found string");
}

TEST_CASE("A recorder's op graph is read whole or not at all", "[importers][shapes]")
{
    // docs/formats.md, headroom_tensor: op, inputs (entries back, positive) and saves (0: this
    // entry, negative: a later output of the same op). A list with anything else is dropped.
    const json root = json::parse(R"({"segments": [], "device_traces": [[
        {"action": "alloc", "addr": 1, "size": 512, "stream": 0,
         "headroom_tensor": {"shape": [4, 8], "dtype": "float32", "op": "aten::randn", "inputs": []}},
        {"action": "alloc", "addr": 2, "size": 512, "stream": 0,
         "headroom_tensor": {"shape": [4, 8], "dtype": "float32", "op": "aten::native_layer_norm",
                             "inputs": [1], "saves": [1, 0, -1]}},
        {"action": "alloc", "addr": 3, "size": 512, "stream": 0,
         "headroom_tensor": {"shape": [4], "dtype": "float32", "op": "aten::native_layer_norm",
                             "inputs": [2, "x"], "saves": [1.5]}},
        {"action": "alloc", "addr": 4, "size": 512, "stream": 0,
         "headroom_tensor": {"shape": [4], "dtype": "float32", "inputs": [1]}},
        {"action": "alloc", "addr": 5, "size": 512, "stream": 0,
         "headroom_tensor": {"shape": [4, 8], "dtype": "float32", "op": "aten::mul", "inputs": [4, 3],
                             "casts": [[4, "float32", 128], [3, 4]], "dtype_arg": 2}},
        {"action": "alloc", "addr": 6, "size": 512, "stream": 0,
         "headroom_tensor": {"shape": [4, 8], "dtype": "float32", "op": "aten::mul", "inputs": [1],
                             "casts": [[1, "float32", -5]], "dtype_arg": "bfloat16"}}]]})");
    Snapshot snap;
    JsonSnapshotImporter::import(root, snap);
    const TraceEvents& ev = snap.devices.at(0).trace;
    REQUIRE(ev.tensors.size() == 6);
    const StringPool& strings = snap.frames.strings();
    const RecordedTensor& a = ev.tensors[0].second;
    const RecordedTensor& b = ev.tensors[1].second;
    const RecordedTensor& c = ev.tensors[2].second;
    const RecordedTensor& d = ev.tensors[3].second;
    CHECK(a.hasOp);
    CHECK(strings.get(a.op) == "aten::randn");
    CHECK(a.inputs.empty());
    CHECK(strings.get(b.op) == "aten::native_layer_norm");
    CHECK(b.inputs == std::vector<uint32_t>{1});
    CHECK(b.saves == std::vector<int32_t>{1, 0, -1});
    CHECK(c.hasOp);
    CHECK(c.inputs.empty()); // "x" is no offset: the list is dropped, the record kept
    CHECK(c.saves.empty());
    CHECK_FALSE(d.hasOp); // inputs without an op say nothing
    CHECK(d.inputs.empty());
    // casts: [input back, a dtype or the entry whose dtype it follows, the bytes cast].
    const RecordedTensor& e = ev.tensors[4].second;
    REQUIRE(e.casts.size() == 2);
    CHECK(e.casts[0].input == 4);
    CHECK(strings.get(e.casts[0].dtype) == "float32");
    CHECK(e.casts[0].bytes == 128);
    CHECK(e.casts[1].like == 4);
    CHECK(e.casts[1].bytes == -1);
    CHECK(e.dtypeArg.like == 2);
    const RecordedTensor& f = ev.tensors[5].second;
    CHECK(f.casts.empty()); // negative bytes: dropped
    CHECK(strings.get(f.dtypeArg.dtype) == "bfloat16");
}
