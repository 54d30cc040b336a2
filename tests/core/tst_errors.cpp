// SPDX-License-Identifier: MIT
// Bad input: a clear error naming the file, the byte offset and what was expected.
#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "picklebuilder.h"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> readFile(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

std::string errorOf(const std::string& name, std::vector<uint8_t> bytes, uint64_t maxInflated = 16ull << 30)
{
    try {
        LoadOptions opt;
        opt.maxInflated = maxInflated;
        Loader::loadBytes(name, std::move(bytes), opt);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "<loaded>";
}

} // namespace

TEST_CASE("Truncated snapshots are reported with the offset, never half-loaded", "[errors]")
{
    for (const char* name : {"pt27_silmont_mem_snapshot.pickle", "pt20_yiyi_oom_snapshot.pickle"}) {
        const auto full = readFile(std::string(HEADROOM_REAL_TRACES_DIR) + "/" + name);
        REQUIRE(full.size() > 1000);
        for (size_t cut : {size_t(1), size_t(2), size_t(11), size_t(100), full.size() / 3, full.size() / 2,
                           full.size() - 2, full.size() - 1}) {
            INFO(name << " cut at " << cut);
            std::vector<uint8_t> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
            const std::string msg = errorOf(name, part);
            CHECK(msg.find(name) == 0);
            CHECK(msg.find("byte ") != std::string::npos);
            CHECK(msg.find("truncated") != std::string::npos);
        }
    }
}

TEST_CASE("Empty, non-pickle, missing and directory inputs", "[errors]")
{
    CHECK_THAT(errorOf("empty.pickle", {}), Catch::Contains("empty.pickle") && Catch::Contains("empty"));
    CHECK_THAT(errorOf("notes.txt", {'h', 'e', 'l', 'l', 'o'}),
               Catch::Contains("byte 0") && Catch::Contains("expected a PyTorch memory snapshot"));
    CHECK_THAT(errorOf("junk.pickle", readFile(std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/not_a_pickle.bin")),
               Catch::Contains("unsupported pickle opcode"));
    CHECK_THAT(errorOf("p9.pickle", {0x80, 9, '.'}), Catch::Contains("unsupported pickle protocol 9"));
    CHECK_THAT(errorOf("stack.pickle", {0x80, 4, 'e', '.'}), Catch::Contains("MARK"));
    CHECK_THAT(errorOf("memo.pickle", {0x80, 4, 'h', 7, '.'}), Catch::Contains("memo index 7"));
    CHECK_THAT(errorOf("int.pickle", {0x80, 4, 'K', 1, '.'}), Catch::Contains("not a memory snapshot"));
    CHECK_THAT(errorOf("page.html", {'<', 'h', 't', 'm', 'l', '>'}), Catch::Contains("without an embedded snapshot"));
    CHECK_THAT(errorOf("trace.json", {'{', '}'}), Catch::Contains("JSON"));

    REQUIRE_THROWS_WITH(Loader::load("/nonexistent/dir/x.pickle"),
                        Catch::Contains("/nonexistent/dir/x.pickle") && Catch::Contains("cannot open"));
    REQUIRE_THROWS_WITH(Loader::load(HEADROOM_SOURCE_DIR), Catch::Contains("is a directory"));
}

TEST_CASE("Wrong types inside a snapshot name the path", "[errors]")
{
    // {'segments': [{'device': 0, 'total_size': 'big'}]}
    std::vector<uint8_t> p = {0x80, 4, '}', '('};
    auto str = [&](const std::string& s) { p.push_back(0x8c); p.push_back(uint8_t(s.size())); p.insert(p.end(), s.begin(), s.end()); };
    str("segments");
    p.push_back(']');
    p.push_back('(');
    p.push_back('}');
    p.push_back('(');
    str("device");
    p.push_back('K'); p.push_back(0);
    str("total_size");
    str("big");
    p.push_back('u');
    p.push_back('e');
    p.push_back('u');
    p.push_back('.');
    CHECK_THAT(errorOf("typed.pickle", p), Catch::Contains("segments[0].total_size: expected an integer, found str"));
}

TEST_CASE("A gzip bomb is refused at the inflate limit", "[errors]")
{
    std::vector<uint8_t> zeros(64 << 20, 0);
    uLongf bound = compressBound(zeros.size());
    std::vector<uint8_t> gz(bound + 32);
    z_stream zs{};
    REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = zeros.data();
    zs.avail_in = static_cast<uInt>(zeros.size());
    zs.next_out = gz.data();
    zs.avail_out = static_cast<uInt>(gz.size());
    REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    gz.resize(zs.total_out);
    deflateEnd(&zs);
    CHECK(gz.size() < (1 << 20));
    CHECK_THAT(errorOf("bomb.pickle.gz", gz, 8 << 20), Catch::Contains("compression bomb"));
}

TEST_CASE("Cancellation stops a load", "[errors]")
{
    std::atomic<bool> cancel{true};
    LoadOptions opt;
    opt.cancel = &cancel;
    auto bytes = readFile(std::string(HEADROOM_REAL_TRACES_DIR) + "/pt27_kk_memory_ctx128_fullstep.pickle");
    REQUIRE_THROWS_AS(Loader::loadBytes("kk.pickle", bytes, opt), LoadCancelled);
}

namespace {

/// {'segments': [], 'device_traces': [[{'action': 'alloc', 'addr': 4096, 'size': SIZE, 'stream': 0}]]}
/// with SIZE written by `size`.
std::vector<uint8_t> oneAlloc(const std::function<void(test::PickleBuilder&)>& size)
{
    test::PickleBuilder p;
    p.proto(4).emptyDict().mark();
    p.str("segments").emptyList();
    p.str("device_traces").emptyList().emptyList().emptyDict().mark();
    p.str("action").str("alloc").str("addr").binint(4096).str("size");
    size(p);
    p.str("stream").binint(0).setitems();
    p.op('a').op('a'); // APPEND the entry, then the device's list
    p.setitems().stop();
    return p.b;
}

} // namespace

TEST_CASE("An out-of-range size is refused whatever its width", "[errors]")
{
    // 8 bytes (2^62), 13 bytes (10^30, wider than any int64), a negative 13-byte one and a float.
    auto le = [](unsigned __int128 v, size_t n) {
        std::vector<uint8_t> out;
        for (size_t i = 0; i < n; ++i, v >>= 8)
            out.push_back(uint8_t(v));
        return out;
    };
    unsigned __int128 e30 = 1;
    for (int i = 0; i < 30; ++i)
        e30 *= 10;
    const std::vector<std::pair<std::string, std::vector<uint8_t>>> cases = {
        {"2^62", oneAlloc([&](test::PickleBuilder& p) { p.long1(le((unsigned __int128)1 << 62, 8)); })},
        {"10^30", oneAlloc([&](test::PickleBuilder& p) { p.long1(le(e30, 13)); })},
        {"-10^30", oneAlloc([&](test::PickleBuilder& p) { p.long1(le(~e30 + 1, 13)); })},
        {"1e30 as a float", oneAlloc([&](test::PickleBuilder& p) {
             const double d = 1e30;
             uint64_t bits;
             std::memcpy(&bits, &d, 8);
             p.op('G');
             for (int i = 7; i >= 0; --i)
                 p.op(uint8_t(bits >> (8 * i)));
         })},
    };
    for (const auto& [what, bytes] : cases) {
        INFO(what);
        const std::string e = errorOf("huge.pickle", bytes);
        CHECK_THAT(e, Catch::Contains("huge.pickle"));
        CHECK_THAT(e, Catch::Contains("trace entry 0: size"));
        CHECK_THAT(e, Catch::Contains("out of range (expected at most 1 PiB)"));
    }
    // The same entry with a plain size loads, so the refusals above are about the size alone.
    CHECK(errorOf("ok.pickle", oneAlloc([](test::PickleBuilder& p) { p.binint(512); })) == "<loaded>");
}
