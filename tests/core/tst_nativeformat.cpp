// SPDX-License-Identifier: MIT
// The .hrt format: every importer's model round-trips (the summary of the .hrt equals the
// summary of its source), forward compatibility, version errors, corrupt files, atomic saves.
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/summary.h"
#include "core/io/loader.h"
#include "core/native/nativeformat.h"
#include "core/native/sectionreader.h"
#include "core/util/atomicfile.h"
#include "core/util/loaderror.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <fstream>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> roundTripInputs()
{
    std::vector<std::string> out;
    for (const fs::path dir : {fs::path(HEADROOM_REAL_TRACES_DIR), fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures",
                               fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures/json"})
        for (const auto& e : fs::directory_iterator(dir)) {
            const std::string n = e.path().filename().string();
            if (!e.is_regular_file() || n.find("malicious") != std::string::npos || n == "not_a_pickle.bin" ||
                n == "empty.pickle" || n.ends_with(".md"))
                continue;
            out.push_back(e.path().string());
        }
    std::sort(out.begin(), out.end());
    return out;
}

nlohmann::json comparable(const LoadedTrace& t)
{
    nlohmann::json j = summaryJson(t);
    j.erase("file");
    j.erase("format");
    return j;
}

std::vector<uint8_t> readAll(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

std::string errorOf(std::vector<uint8_t> bytes)
{
    try {
        Loader::loadBytes("x.hrt", std::move(bytes));
    } catch (const LoadError& e) {
        return e.what();
    }
    return "no error";
}

/// The bytes of `file` with a section inserted before END.
std::vector<uint8_t> withSection(std::vector<uint8_t> file, const char id[4], uint32_t flags, std::string payload)
{
    // END is the last 24 bytes (an empty section).
    std::vector<uint8_t> sec(24);
    std::memcpy(sec.data(), id, 4);
    std::memcpy(sec.data() + 4, &flags, 4);
    const uint64_t n = payload.size();
    std::memcpy(sec.data() + 8, &n, 8);
    std::memcpy(sec.data() + 16, &n, 8);
    sec.insert(sec.end(), payload.begin(), payload.end());
    file.insert(file.end() - 24, sec.begin(), sec.end());
    return file;
}

std::string stackText(const Snapshot& s, uint32_t id)
{
    std::string out;
    for (uint32_t f : s.frames.stack(id))
        out += s.frames.formatFrame(f) + "\n";
    return out;
}

bool sameStacks(const Snapshot& a, const Snapshot& b, size_t d)
{
    const auto& x = a.devices[d].trace.stack;
    const auto& y = b.devices[d].trace.stack;
    for (size_t i = 0; i < x.size(); ++i)
        if (stackText(a, x[i]) != stackText(b, y[i]))
            return false;
    return true;
}

} // namespace

TEST_CASE("Every real file and fixture round-trips through .hrt", "[hrt]")
{
    int count = 0;
    for (const std::string& path : roundTripInputs()) {
        INFO(path);
        auto source = Loader::load(path);
        for (bool compress : {true, false}) {
            NativeFormat::WriteOptions opt;
            opt.compress = compress;
            auto reopened = Loader::loadBytes(path + ".hrt", NativeFormat::encode(source->snapshot, opt));
            CHECK(comparable(*reopened) == comparable(*source));
            const auto& a = source->snapshot;
            const auto& b = reopened->snapshot;
            REQUIRE(a.devices.size() == b.devices.size());
            for (size_t d = 0; d < a.devices.size(); ++d) {
                CHECK(a.devices[d].trace.stack.size() == b.devices[d].trace.stack.size());
                CHECK(a.devices[d].trace.category == b.devices[d].trace.category);
                CHECK(a.devices[d].deviceType == b.devices[d].deviceType);
                CHECK(a.devices[d].sourceFile == b.devices[d].sourceFile);
                CHECK(sameStacks(a, b, d));
                CHECK(reopened->timelines[d].allocated == source->timelines[d].allocated);
                CHECK(reopened->timelines[d].reserved == source->timelines[d].reserved);
            }
            CHECK(a.timeWindows.size() == b.timeWindows.size());
            CHECK(reopened->timelines.size() == source->timelines.size());
        }
        ++count;
    }
    CHECK(count >= 20);
}

TEST_CASE(".hrt forward compatibility and version errors", "[hrt][errors]")
{
    auto source = Loader::load((fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures/oom.pickle").string());
    Snapshot& snap = const_cast<Snapshot&>(source->snapshot);
    snap.userData = R"({"notes":["peak is the optimizer"],"bookmarks":[12]})";
    const std::vector<uint8_t> file = NativeFormat::encode(snap);
    const nlohmann::json expected = comparable(*source);

    // Unknown, non-critical section from a newer writer: skipped.
    auto newer = Loader::loadBytes("n.hrt", withSection(file, "ZZZZ", 0, "future stuff"));
    CHECK(comparable(*newer) == expected);
    CHECK(newer->snapshot.userData == snap.userData);
    // Unknown critical section: a clear error.
    CHECK_THAT(errorOf(withSection(file, "ZZZZ", 2, "x")),
               Catch::Contains("section 'ZZZZ' is required") && Catch::Contains("newer Headroom"));
    // A newer minor version reads; a newer major version is refused clearly.
    auto minor = file;
    minor[10] = 7;
    CHECK(comparable(*Loader::loadBytes("m.hrt", minor)) == expected);
    auto major = file;
    major[8] = 2;
    CHECK_THAT(errorOf(major), Catch::Contains("x.hrt: byte 8: Headroom trace format version 2.0 cannot be read") &&
                                   Catch::Contains("newer Headroom"));
}

TEST_CASE("Corrupt .hrt files give errors, never crashes", "[hrt][errors]")
{
    auto source = Loader::load((fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures/ring_wrapped.pickle").string());
    for (bool compress : {true, false}) {
        NativeFormat::WriteOptions opt;
        opt.compress = compress;
        const std::vector<uint8_t> file = NativeFormat::encode(source->snapshot, opt);
        for (size_t cut = 9; cut < file.size(); cut += std::max<size_t>(1, file.size() / 97)) {
            INFO("cut at " << cut);
            CHECK_THAT(errorOf(std::vector<uint8_t>(file.begin(), file.begin() + static_cast<long>(cut))),
                       Catch::Contains("x.hrt"));
        }
        // Flipped bytes: either a clean error or a model that still loads.
        for (size_t at = 24; at < file.size(); at += std::max<size_t>(1, file.size() / 61)) {
            auto bad = file;
            bad[at] ^= 0x5a;
            try {
                Loader::loadBytes("x.hrt", bad);
            } catch (const LoadError& e) {
                CHECK_THAT(std::string(e.what()), Catch::Contains("x.hrt"));
            }
        }
    }
}

TEST_CASE("Saves are atomic", "[hrt]")
{
    const fs::path dir = fs::temp_directory_path() / ("headroom-atomic-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path target = dir / "trace.hrt";
    auto source = Loader::load((fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures/oom.pickle").string());
    NativeFormat::write(source->snapshot, target.string());
    const auto first = readAll(target.string());
    CHECK(comparable(*Loader::load(target.string())) == comparable(*source));
    // Overwrite: the new content replaces the old in one step, no temporary files remain.
    auto other = Loader::load((fs::path(HEADROOM_SOURCE_DIR) / "tests/fixtures/expandable.pickle").string());
    NativeFormat::write(other->snapshot, target.string());
    CHECK(comparable(*Loader::load(target.string())) == comparable(*other));
    int entries = 0;
    for (const auto& e : fs::directory_iterator(dir))
        entries += e.is_regular_file();
    CHECK(entries == 1);
    // A failing save (the target is a directory, so rename fails) leaves the old file intact.
    const fs::path blocked = dir / "blocked";
    fs::create_directories(blocked / "child");
    CHECK_THROWS_AS(AtomicFile::write(blocked.string(), first), SaveError);
    CHECK(fs::is_directory(blocked / "child"));
    CHECK_THROWS_AS(AtomicFile::write((dir / "missing/dir/x.hrt").string(), first), SaveError);
    entries = 0;
    for (const auto& e : fs::directory_iterator(dir))
        entries += e.is_regular_file();
    CHECK(entries == 1);
    fs::remove_all(dir);
}

namespace {

std::vector<uint8_t> zstdFrame(const void* data, size_t size)
{
    std::vector<uint8_t> out(ZSTD_compressBound(size));
    out.resize(ZSTD_compress(out.data(), out.size(), data, size, 3));
    return out;
}

template <typename F>
std::string readError(F&& f)
{
    try {
        f();
    } catch (const LoadError& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_CASE("Section payloads stream into the caller's arrays, whatever their ratio", "[hrt]")
{
    const std::string file = "x.hrt";
    // 2M equal values: zstd packs them far beyond the ratio assumed for sizing up front,
    // so the array grows as its data arrives.
    std::vector<int64_t> values(2'000'000, 7);
    values.back() = -1;
    const size_t raw = values.size() * sizeof(int64_t);
    std::vector<uint8_t> packed = zstdFrame(values.data(), raw);
    REQUIRE(packed.size() * 1024 < raw);
    {
        SectionReader in(file, "section 'DEVC'", packed.data(), packed.size(), raw, true);
        std::vector<int64_t> got;
        in.readArray(got, values.size());
        CHECK(got == values);
        CHECK(in.atEnd());
        in.finish();
    }
    // Two frames back to back read as one payload.
    std::vector<uint8_t> two = zstdFrame(values.data(), raw / 2);
    const std::vector<uint8_t> second = zstdFrame(values.data() + values.size() / 2, raw / 2);
    two.insert(two.end(), second.begin(), second.end());
    {
        SectionReader in(file, "section 'DEVC'", two.data(), two.size(), raw, true);
        std::vector<int64_t> got;
        in.readArray(got, values.size());
        CHECK(got == values);
        in.finish();
    }
    // A header that claims more than the data holds, or less, or data cut short: clear errors.
    CHECK_THAT(readError([&] {
                   SectionReader in(file, "section 'DEVC'", packed.data(), packed.size(), raw + 8, true);
                   std::vector<int64_t> got;
                   in.readArray(got, values.size() + 1);
               }),
               Catch::Contains("x.hrt") && Catch::Contains("section 'DEVC'") && Catch::Contains("ends early"));
    CHECK_THAT(readError([&] {
                   SectionReader in(file, "section 'DEVC'", packed.data(), packed.size(), raw - 8, true);
                   in.skip(raw - 8);
                   in.finish();
               }),
               Catch::Contains("more data than the " + std::to_string(raw - 8) + " bytes the header claims"));
    CHECK_THAT(readError([&] {
                   SectionReader in(file, "section 'DEVC'", packed.data(), packed.size() / 2, raw, true);
                   in.skip(raw);
               }),
               Catch::Contains("corrupt zstd data"));
    CHECK_THAT(readError([&] {
                   SectionReader in(file, "section 'STRS'", packed.data(), packed.size(), packed.size(), false);
                   in.skip(packed.size() - 2);
                   in.get<uint32_t>();
               }),
               Catch::Contains("expected 4 more bytes, the section ends after 2"));
}

TEST_CASE("A highly compressible trace round-trips through .hrt", "[hrt]")
{
    // The same allocation, freed and made again 300,000 times: the device section packs
    // thousands to one, past the ratio the reader sizes arrays for up front.
    Snapshot snap;
    snap.path = "repeat.pickle";
    DeviceData d;
    TraceEvents& t = d.trace;
    for (int i = 0; i < 300'000; ++i) {
        const TraceAction a = i % 3 == 0 ? TraceAction::Alloc : i % 3 == 1 ? TraceAction::FreeRequested
                                                                            : TraceAction::FreeCompleted;
        t.action.push_back(a);
        t.addr.push_back(0x7f0000000000);
        t.size.push_back(1 << 20);
        t.stream.push_back(0);
        t.timeUs.push_back(TraceEvents::kNoTime);
        t.stack.push_back(0);
    }
    d.actionCounts = {{"alloc", 100'000}, {"free_requested", 100'000}, {"free_completed", 100'000}};
    snap.devices.push_back(std::move(d));
    const std::vector<uint8_t> bytes = NativeFormat::encode(snap);
    CHECK(bytes.size() < 300'000 * 37 / 1024);
    auto reopened = Loader::loadBytes("repeat.hrt", bytes);
    REQUIRE(reopened->snapshot.devices.size() == 1);
    const TraceEvents& r = reopened->snapshot.devices[0].trace;
    CHECK(r.action == snap.devices[0].trace.action);
    CHECK(r.addr == snap.devices[0].trace.addr);
    CHECK(r.size == snap.devices[0].trace.size);
    CHECK(reopened->timelines[0].peakAllocated == 1 << 20);
    CHECK(reopened->timelines[0].pendingFreeCount == 0);
}

TEST_CASE("A recorder's tensor records survive .hrt", "[hrt][shapes]")
{
    // tests/data/cpu/llama_base_shapes.pickle carries headroom_tensor on its alloc entries.
    const std::string path = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/llama_base_shapes.pickle";
    auto source = Loader::load(path);
    const auto& a = source->snapshot.devices[0].trace.tensors;
    REQUIRE_FALSE(a.empty());
    auto reopened = Loader::loadBytes(path + ".hrt", NativeFormat::encode(source->snapshot, {}));
    const auto& b = reopened->snapshot.devices[0].trace.tensors;
    REQUIRE(b.size() == a.size());
    const StringPool& sa = source->snapshot.frames.strings();
    const StringPool& sb = reopened->snapshot.frames.strings();
    for (size_t i = 0; i < a.size(); ++i) {
        INFO(i);
        CHECK(a[i].first == b[i].first);
        CHECK(a[i].second.shape == b[i].second.shape);
        CHECK(sa.get(a[i].second.dtype) == sb.get(b[i].second.dtype));
        CHECK(a[i].second.hasModule == b[i].second.hasModule);
        CHECK(sa.get(a[i].second.module) == sb.get(b[i].second.module));
        CHECK(a[i].second.kind == b[i].second.kind);
        CHECK(a[i].second.phase == b[i].second.phase);
        CHECK(a[i].second.batchDims == b[i].second.batchDims);
        CHECK(a[i].second.seqDims == b[i].second.seqDims);
    }
}

TEST_CASE("A recorder's op graph survives .hrt, and so does the autocast it replays", "[hrt][shapes]")
{
    // docs/formats.md: like, op, inputs, saves, casts, dtype_arg ride in the tensor row's ninth
    // item; the what-if of the reopened file replays autocast to the same peak.
    const std::string path = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/llama_graph.pickle";
    auto source = Loader::load(path);
    auto reopened = Loader::loadBytes(path + ".hrt", NativeFormat::encode(source->snapshot, {}));
    const auto& a = source->snapshot.devices[0].trace.tensors;
    const auto& b = reopened->snapshot.devices[0].trace.tensors;
    REQUIRE(b.size() == a.size());
    const StringPool& sa = source->snapshot.frames.strings();
    const StringPool& sb = reopened->snapshot.frames.strings();
    size_t casts = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        INFO(i);
        const RecordedTensor &x = a[i].second, &y = b[i].second;
        CHECK(x.like == y.like);
        CHECK(x.hasOp == y.hasOp);
        CHECK(sa.get(x.op) == sb.get(y.op));
        CHECK(x.inputs == y.inputs);
        CHECK(x.saves == y.saves);
        REQUIRE(x.casts.size() == y.casts.size());
        for (size_t c = 0; c < x.casts.size(); ++c) {
            CHECK(x.casts[c].input == y.casts[c].input);
            CHECK(sa.get(x.casts[c].dtype) == sb.get(y.casts[c].dtype));
            CHECK(x.casts[c].like == y.casts[c].like);
            CHECK(x.casts[c].bytes == y.casts[c].bytes);
        }
        casts += x.casts.size();
    }
    CHECK(casts > 0);
    auto amp = [](const LoadedTrace& t) {
        const Calibration cal = calibrate(t, 0, analyzeDevice(t, 0), {});
        LeverConfig target = cal.baseline.config;
        target.precision = Precision::AmpBf16;
        return project(cal.baseline, target, WhatIfConstants{}, *devicePreset("80gib"));
    };
    const Projection p = amp(*source), q = amp(*reopened);
    REQUIRE(p.replayTarget.autocast);
    CHECK(q.replayTarget.autocast);
    CHECK(q.peakAllocated == p.peakAllocated);
}
