// SPDX-License-Identifier: MIT
#include "picklebuilder.h"

#include "core/io/loader.h"
#include "core/io/picklereader.h"
#include "core/util/loaderror.h"

#include <catch2/catch.hpp>

using namespace headroom;
using headroom::test::PickleBuilder;

namespace {

PickleValue parse(PickleDocument& doc, const std::vector<uint8_t>& bytes)
{
    PickleReader::parse(doc, bytes.data(), bytes.size(), "test.pickle", {});
    return doc.root();
}

} // namespace

TEST_CASE("LONG1 integers up to 9 bytes keep their value", "[pickle]")
{
    FrameTable frames;
    PickleDocument doc(frames);
    PickleBuilder p;
    p.proto(4).emptyList().mark();
    p.long1({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}); // 2^64-1 (9 bytes)
    p.long1({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00}); // 2^63
    p.long1({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80});       // -2^63 (8 bytes)
    p.long1({0x00, 0xc0, 0x4e, 0x9b, 0x7f, 0x00});                   // an address ~1.4e14
    p.long1({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a}); // too big: clamped, no crash
    p.binint(-1);
    p.appends().stop();
    const auto root = parse(doc, p.b);
    auto items = doc.items(root);
    REQUIRE(items.size() == 6);
    CHECK(static_cast<uint64_t>(*doc.asInt(items[0])) == UINT64_MAX);
    CHECK(static_cast<uint64_t>(*doc.asInt(items[1])) == (uint64_t(1) << 63));
    CHECK(*doc.asInt(items[2]) == INT64_MIN);
    CHECK(*doc.asInt(items[3]) == 0x7f9b4ec000LL);
    CHECK(doc.toText(items[4]).find("clamped") != std::string::npos);
    CHECK(*doc.asInt(items[5]) == -1);
}

TEST_CASE("FRAME opcodes may split a container anywhere", "[pickle]")
{
    FrameTable frames;
    PickleDocument doc(frames);
    PickleBuilder p;
    p.proto(4).frame(3).emptyList().memoize().mark();
    for (int i = 0; i < 5; ++i) {
        p.frame(5).binint(i);
    }
    p.appends().stop();
    auto items = doc.items(parse(doc, p.b));
    REQUIRE(items.size() == 5);
    CHECK(*doc.asInt(items[4]) == 4);
}

TEST_CASE("Memoized frames and frame lists stay shared (a DAG, not copies)", "[pickle]")
{
    // {'segments': [], 'device_traces': [[{action, addr, size, frames: <same list>} x 100000]]}
    PickleBuilder p;
    p.proto(4).emptyDict().memoize().mark();                     // memo 0: root
    p.str("segments").memoize().emptyList().memoize();           // 1, 2
    p.str("device_traces").memoize().emptyList().memoize().mark(); // 3, 4
    p.emptyList().memoize().mark();                                // 5: device 0 list
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
        p.emptyDict().memoize().mark();
        if (i == 0) {
            p.str("action").memoize();                                   // 7
            p.str("alloc").memoize();                                    // 8
            p.str("addr").memoize();                                     // 9
            p.binint(4096 + i * 512);
            p.str("size").memoize();                                     // 10
            p.binint(512);
            p.str("frames").memoize();                                   // 11
            p.emptyList().memoize().mark();                              // 12: the shared frames list
            p.emptyDict().memoize().mark();                              // 13: a frame dict
            p.str("filename").memoize().str("train.py").memoize();       // 14, 15
            p.str("line").memoize().binint(42);                          // 16
            p.str("name").memoize().str("forward").memoize();            // 17, 18
            p.setitems().appends();
        } else {
            p.binget(7).binget(8).binget(9).binint(4096 + i * 512).binget(10).binint(512);
            p.binget(11).binget(12);
        }
        p.setitems();
        if (i % 1000 == 999)
            p.appends().mark();
    }
    p.appends().appends(); // close the device list batch, then device_traces
    p.setitems().stop();
    auto trace = Loader::loadBytes("shared.pickle", p.b);
    REQUIRE(trace->snapshot.devices.size() == 1);
    const auto& ev = trace->snapshot.devices[0].trace;
    REQUIRE(ev.count() == n);
    CHECK(trace->snapshot.frames.frameCount() == 1);
    CHECK(trace->snapshot.frames.stackCount() == 2); // the empty stack and the shared one
    CHECK(ev.stack.front() == ev.stack.back());
    CHECK(ev.stack.front() != 0);
    CHECK(trace->timelines[0].peakAllocated == int64_t(n) * 512);
    CHECK(trace->timelines[0].peakEventIndex == n - 1);
}

TEST_CASE("Opcodes that build objects are refused and nothing runs", "[pickle][security]")
{
    const char* names[] = {"malicious_reduce.pickle", "malicious_stack_global.pickle", "malicious_build.pickle"};
    std::remove("/tmp/headroom_pwned");
    for (const char* n : names) {
        const std::string path = std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/" + n;
        INFO(path);
        try {
            Loader::load(path);
            FAIL("a malicious pickle loaded");
        } catch (const LoadError& e) {
            const std::string msg = e.what();
            CHECK(msg.find(n) != std::string::npos);
            CHECK(msg.find("byte ") != std::string::npos);
            CHECK(msg.find("not a memory snapshot") != std::string::npos);
            CHECK(msg.find("nothing was executed") != std::string::npos);
        }
    }
    FILE* f = std::fopen("/tmp/headroom_pwned", "r");
    CHECK(f == nullptr);
    if (f)
        std::fclose(f);
    // Each refused opcode on its own, right after PROTO.
    for (uint8_t op : {uint8_t('c'), uint8_t(0x93), uint8_t('R'), uint8_t('b'), uint8_t('i'), uint8_t('o'),
                       uint8_t(0x81), uint8_t(0x92), uint8_t('P'), uint8_t('Q'), uint8_t(0x82), uint8_t(0x83),
                       uint8_t(0x84)}) {
        PickleBuilder p;
        p.proto(2).op(op).stop();
        FrameTable frames;
        PickleDocument doc(frames);
        REQUIRE_THROWS_WITH(parse(doc, p.b), Catch::Contains("byte 2") && Catch::Contains("refused"));
    }
}

TEST_CASE("The TorchScript pickler encoding is recognised", "[pickle]")
{
    auto trace = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/cpp_pickler.pickle");
    CHECK(trace->snapshot.format.find("C++") != std::string::npos);
    CHECK(!trace->snapshot.devices.empty());
    const auto& ev = trace->snapshot.devices[0].trace;
    CHECK(ev.count() == 48);
}

TEST_CASE("Protocols 2, 3 and 5 read the same content", "[pickle]")
{
    auto p2 = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/proto2.pickle");
    auto p5 = Loader::load(std::string(HEADROOM_SOURCE_DIR) + "/tests/fixtures/proto5.pickle");
    CHECK(p2->snapshot.format == "pickle protocol 2");
    CHECK(p5->snapshot.format == "pickle protocol 5");
    CHECK(p2->timelines[0].allocated == p5->timelines[0].allocated);
    CHECK(p2->snapshot.annotations.size() == p5->snapshot.annotations.size());
}

TEST_CASE("A traceback seen before is its stack only while its memo entries keep their values", "[pickle]")
{
    // Three allocations whose frames lists are fresh lists of memo references. The second and
    // third lists are the same bytes (BINGET 13, BINGET 19), but between them memo 13 is
    // rebound to another frame: the third must not take the second's stack from the run cache.
    PickleBuilder p;
    p.proto(4).emptyDict().memoize().mark();                       // 0: root
    p.str("segments").memoize().emptyList().memoize();             // 1, 2
    p.str("device_traces").memoize().emptyList().memoize().mark(); // 3, 4
    p.emptyList().memoize().mark();                                // 5: device 0 list
    p.emptyDict().memoize().mark();                                // 6: entry 0
    p.str("action").memoize().str("alloc").memoize();              // 7, 8
    p.str("addr").memoize().binint(4096);                          // 9
    p.str("size").memoize().binint(512);                           // 10
    p.str("frames").memoize().emptyList().memoize().mark();        // 11, 12
    p.emptyDict().memoize().mark();                                // 13: frame A
    p.str("filename").memoize().str("train.py").memoize();         // 14, 15
    p.str("line").memoize().binint(42);                            // 16
    p.str("name").memoize().str("forward").memoize();              // 17, 18
    p.setitems();
    p.emptyDict().memoize().mark();                                // 19: frame B
    p.binget(14).str("b.py").memoize().binget(16).binint(7).binget(17).str("g").memoize(); // 20, 21
    p.setitems().appends().setitems();
    auto entry = [&](int addr) {
        p.emptyDict().memoize().mark();
        p.binget(7).binget(8).binget(9).binint(addr).binget(10).binint(512).binget(11);
        p.emptyList().memoize().mark().binget(13).binget(19).appends();
        p.setitems();
    };
    entry(8192);
    // Rebind memo 13 to frame C (no pickler does this; a crafted file may).
    p.emptyDict().memoize().mark();
    p.binget(14).str("other.py").memoize().binget(16).binint(99).binget(17).str("h").memoize();
    p.setitems().binput(13).op('0'); // BINPUT 13, POP
    entry(12288);
    p.appends().appends();
    p.setitems().stop();

    auto trace = Loader::loadBytes("rebind.pickle", p.b);
    const auto& ev = trace->snapshot.devices.at(0).trace;
    REQUIRE(ev.count() == 3);
    const FrameTable& ft = trace->snapshot.frames;
    CHECK(ev.stack[0] == ev.stack[1]);
    REQUIRE(ev.stack[2] != ev.stack[1]);
    const auto third = ft.stack(ev.stack[2]);
    REQUIRE(third.size() == 2);
    CHECK(ft.strings().get(ft.frame(third[0]).file) == "other.py");
    CHECK(ft.strings().get(ft.frame(third[1]).file) == "b.py");
}
