// SPDX-License-Identifier: MIT
// MemTracker's forward moments per module (core/analysis/moduleforward.h) on a CPU recording
// with the recorder's module names and on the bundled sample by its stacks: a parent's window
// holds its children's, and the moments are the allocated curve's values there.
#include "core/analysis/memoryanalysis.h"
#include "core/analysis/moduleforward.h"
#include "core/io/loader.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

void checkMoments(const MemoryTimeline& tl, const ModuleForwardWindow& w)
{
    REQUIRE(w.firstEvent >= 0);
    REQUIRE(w.lastEvent >= w.firstEvent);
    CHECK(w.peakEvent >= w.firstEvent);
    CHECK(w.peakEvent <= w.lastEvent);
    const auto begin = tl.allocated.begin() + w.firstEvent, end = tl.allocated.begin() + w.lastEvent + 1;
    CHECK(w.peakBytes == *std::max_element(begin, end));
    CHECK(w.afterBytes == tl.allocated[size_t(w.lastEvent)]);
    CHECK(w.beforeBytes == (w.firstEvent == 0 ? tl.initialAllocated : tl.allocated[size_t(w.firstEvent - 1)]));
    CHECK(w.beforeBytes < w.peakBytes); // the first allocation is in the window
}

} // namespace

TEST_CASE("Forward moments of recorded modules: a parent's window holds its children's", "[modules]")
{
    const auto trace = Loader::load(HEADROOM_SOURCE_DIR "/tests/data/cpu/llama_base_shapes.pickle");
    const DeviceAnalysis analysis = analyzeDevice(*trace, 0);
    const MemoryTimeline& tl = trace->timelines[0];
    const ModuleForwardWindows w = moduleForwardWindows(*trace, 0, analysis, tl.peakEventIndex);
    CHECK(w.iteration == analysis.phases.iterationOf(tl.peakEventIndex));
    const ModuleForwardWindow* layer = w.find("n:blocks.blocks.0");
    const ModuleForwardWindow* attn = w.find("n:blocks.blocks.0.self_attn");
    const ModuleForwardWindow* next = w.find("n:blocks.blocks.1");
    REQUIRE(layer);
    REQUIRE(attn);
    REQUIRE(next);
    checkMoments(tl, *layer);
    checkMoments(tl, *attn);
    CHECK(layer->firstEvent <= attn->firstEvent);
    CHECK(layer->lastEvent >= attn->lastEvent);
    CHECK(layer->count > attn->count);
    CHECK(layer->lastEvent < next->firstEvent); // layer 0's forward ends before layer 1's begins
    // Every window lies in the iteration.
    const Iteration& it = analysis.phases.iterations[size_t(w.iteration)];
    for (const auto& [key, win] : w.byKey) {
        INFO(key);
        CHECK(win.firstEvent >= it.startEvent);
        CHECK(win.lastEvent <= it.endEvent);
    }
}

TEST_CASE("Forward moments from the stacks alone on the bundled sample", "[modules]")
{
    const auto trace = Loader::load(HEADROOM_REAL_TRACES_DIR "/pt27_kk_memory_ctx128_fullstep.pickle");
    const DeviceAnalysis analysis = analyzeDevice(*trace, 0);
    const MemoryTimeline& tl = trace->timelines[0];
    const ModuleForwardWindows w = moduleForwardWindows(*trace, 0, analysis, tl.peakEventIndex);
    REQUIRE_FALSE(w.byKey.empty());
    for (const auto& [key, win] : w.byKey) {
        INFO(key);
        CHECK(key.rfind("f:", 0) == 0); // no names in the file: keyed by forward frames
        checkMoments(tl, win);
    }
}
