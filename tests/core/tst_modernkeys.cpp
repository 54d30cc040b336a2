// SPDX-License-Identifier: MIT
// What the newest PyTorch records (issue 30): a generated 2.10-era snapshot
// (tools/gen_modern_snapshot.py) with user_metadata, forward_frames, FX frames and two private
// pools. Each key is read, survives .hrt, and reaches what shows it: the FX frame reads as the
// model's line with the kernel beside it and names the module, the backward's allocations carry
// their forward's stack, the private pools are apart in the replay, the allocator state and the
// pool curves.
#include "core/analysis/moduleof.h"
#include "core/analysis/privatepools.h"
#include "core/io/loader.h"
#include "core/model/recordedtensors.h"
#include "core/native/nativeformat.h"
#include "core/replay/allocatorhistory.h"
#include "core/replay/allocatorreplay.h"
#include "core/replay/allocatorstate.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

constexpr int64_t MiB = int64_t(1) << 20;

std::shared_ptr<const LoadedTrace> modern()
{
    static auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/modern/pt210_all_keys.pickle");
    return trace;
}

/// The first alloc entry whose stack's innermost frame has FX information.
int64_t firstCompiledAlloc(const LoadedTrace& t)
{
    const TraceEvents& ev = t.snapshot.devices[0].trace;
    for (size_t i = 0; i < ev.count(); ++i)
        if (ev.action[i] == TraceAction::Alloc && !t.snapshot.frames.stack(ev.stack[i]).empty() &&
            t.snapshot.frames.fx(t.snapshot.frames.stack(ev.stack[i]).front()))
            return int64_t(i);
    return -1;
}

} // namespace

TEST_CASE("A 2.10-era snapshot's user_metadata, forward_frames, FX frames and pool ids are read", "[modern]")
{
    const auto t = modern();
    const TraceEvents& ev = t->snapshot.devices[0].trace;
    const FrameTable& ft = t->snapshot.frames;
    // Every alloc but the parameters' names its module (or the optimizer, a graph).
    CHECK(ev.userMetadata.size() == 14);
    CHECK(entryStringAt(ev.userMetadata, ft.strings(), 1).empty());
    CHECK(entryStringAt(ev.userMetadata, ft.strings(), ev.userMetadata.front().first) == "layers.0");
    REQUIRE(ev.forwardFrames.size() == 2); // the two gradients of the saved activations
    const std::string_view forward = ft.strings().get(ev.forwardFrames[0].second);
    CHECK(forward.find("line 22, in forward\n    b = self.relu(a)") != std::string_view::npos);
    CHECK(forward.find("loss = model(x).sum()\n  File") != std::string_view::npos); // joined as the viewer joins

    const int64_t compiled = firstCompiledAlloc(*t);
    REQUIRE(compiled >= 0);
    const uint32_t kernel = ft.stack(ev.stack[size_t(compiled)]).front();
    const FxFrame* fx = ft.fx(kernel);
    REQUIRE(fx);
    CHECK(ft.strings().get(fx->node) == "addmm");
    CHECK(ft.strings().get(fx->op) == "call_function");
    CHECK(ft.strings().get(fx->target) == "aten.addmm.default");
    CHECK(ft.formatFrame(kernel) ==
          "/home/user/project/model.py:21:forward [compiled: addmm at /tmp/torchinductor_user/k7/ck7abc.py:45:call]");
    CHECK(ft.formatRawFrame(kernel) == "/tmp/torchinductor_user/k7/ck7abc.py:45:call");
    CHECK(entryStringAt(ev.compileContext, ft.strings(), compiled) == "Torch-Compiled Region: 0/0");
    // The module is the model's forward behind the kernel, not dynamo's wrapper.
    const ModuleOf m = moduleOf(ft, ev, compiled, ev.stack[size_t(compiled)]);
    REQUIRE(m.forwardFrame != UINT32_MAX);
    CHECK(ft.formatRawFrame(m.forwardFrame) == "/home/user/project/model.py:21:forward");

    // pool_id (0, 0) is the default pool and is not kept; the graphs' entries are.
    REQUIRE_FALSE(ev.poolIds.empty());
    std::vector<std::pair<int64_t, int64_t>> ids;
    for (const auto& [e, id] : ev.poolIds)
        ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    CHECK(ids == std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {2, 0}});
}

TEST_CASE("Private pools stay apart: replay, allocator state and each pool's curve", "[modern]")
{
    const auto t = modern();
    const DeviceData& dev = t->snapshot.devices[0];
    const MemoryTimeline& tl = t->timelines[0];
    const AllocatorReplayResult r = replayAllocator(t->snapshot, dev, tl);
    CHECK(r.segmentEventsRecorded == 4);
    CHECK(r.segmentEventsMatched == 4);
    CHECK_FALSE(r.firstDivergence);

    const AllocatorState recorded = recordedAllocatorState(dev);
    const auto pools = recorded.privatePools();
    REQUIRE(pools.size() == 2);
    CHECK(pools[0].poolId == std::pair<int64_t, int64_t>{1, 0});
    CHECK(pools[0].reserved == 20 * MiB);
    CHECK(pools[0].allocated == 5 * MiB);
    // The reconstruction from the trace knows each segment's pool from its segment_alloc.
    const AllocatorHistory history(dev, tl);
    const AllocatorState last = history.stateAt(tl, int64_t(dev.trace.count()) - 1);
    REQUIRE(last.privatePools().size() == 2);
    CHECK(last.privatePools()[1].poolId == std::pair<int64_t, int64_t>{2, 0});

    const PrivatePoolCurves curves = privatePoolCurves(dev, tl);
    REQUIRE(curves.ids.size() == 2);
    CHECK(curves.peakBytes == std::vector<int64_t>{5 * MiB, 5 * MiB});
    CHECK(curves.liveBytes[0].back() == 5 * MiB);
    CHECK(curves.liveBytes[0].front() == 0);
}

TEST_CASE("The newest keys survive a save as .hrt", "[modern][hrt]")
{
    const auto t = modern();
    const auto back = Loader::loadBytes("modern.hrt", NativeFormat::encode(t->snapshot));
    const TraceEvents& a = t->snapshot.devices[0].trace;
    const TraceEvents& b = back->snapshot.devices[0].trace;
    CHECK(b.poolIds == a.poolIds);
    REQUIRE(b.forwardFrames.size() == a.forwardFrames.size());
    CHECK(back->snapshot.frames.strings().get(b.forwardFrames[0].second) ==
          t->snapshot.frames.strings().get(a.forwardFrames[0].second));
    const int64_t compiled = firstCompiledAlloc(*back);
    REQUIRE(compiled == firstCompiledAlloc(*t));
    const FrameTable& ft = back->snapshot.frames;
    CHECK(ft.formatFrame(ft.stack(b.stack[size_t(compiled)]).front()) ==
          t->snapshot.frames.formatFrame(t->snapshot.frames.stack(a.stack[size_t(compiled)]).front()));
    CHECK(privatePoolCurves(back->snapshot.devices[0], back->timelines[0]).ids.size() == 2);
}

TEST_CASE("user_metadata that reads as a qualified name names the module; other text does not", "[modern][modules]")
{
    CHECK(isQualifiedModuleName("layers.0.attn"));
    CHECK(isQualifiedModuleName("encoder"));
    CHECK_FALSE(isQualifiedModuleName(""));
    CHECK_FALSE(isQualifiedModuleName("step 3"));
    CHECK_FALSE(isQualifiedModuleName("kv_cache: layer3"));
    CHECK_FALSE(isQualifiedModuleName("layers..0"));
    CHECK_FALSE(isQualifiedModuleName(".layers"));

    const auto t = modern();
    const TraceEvents& ev = t->snapshot.devices[0].trace;
    const FrameTable& ft = t->snapshot.frames;
    const int64_t compiled = firstCompiledAlloc(*t);
    const ModuleOf m = moduleOf(ft, ev, compiled, ev.stack[size_t(compiled)]);
    CHECK(m.named);
    CHECK(m.fromMetadata);
    CHECK(m.name == "layers.0");
    CHECK(moduleSourceKey(m) == "user_metadata");
    CHECK(m.forwardFrame != UINT32_MAX); // the stack's answer is kept beside it
    CHECK(moduleUnder(m, "n:layers"));
    CHECK_FALSE(moduleUnder(m, "n:layers.1"));
    // The parameters carry no metadata: no module.
    CHECK_FALSE(moduleOf(ft, ev, 1, ev.stack[1]).any());
}
