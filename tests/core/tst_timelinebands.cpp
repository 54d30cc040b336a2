// SPDX-License-Identifier: MIT
// The stacked-area series and the small range queries of timelinebands.h, each against a
// pass over every allocation.
#include "core/analysis/categoryclassifier.h"
#include "core/analysis/timelinebands.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace headroom;

namespace {

Allocation alloc(int64_t start, int64_t end, int64_t size)
{
    Allocation a;
    a.size = size;
    a.start = start;
    a.end = end;
    return a;
}

GroupedSeries::Values bruteValues(const MemoryTimeline& tl, const std::vector<int>& group, int64_t event)
{
    GroupedSeries::Values v{};
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        if (group[i] >= 0 && group[i] < static_cast<int>(GroupedSeries::kGroups) && tl.allocations[i].aliveAfter(event))
            v[static_cast<size_t>(group[i])] += tl.allocations[i].size;
    return v;
}

/// Random lifetimes over `events` events, sizes and groups; some alive before, some after.
MemoryTimeline randomTimeline(size_t events, size_t count, std::mt19937_64& rng, std::vector<int>& group)
{
    MemoryTimeline tl;
    tl.allocated.assign(events, 0);
    for (size_t i = 0; i < count; ++i) {
        const bool before = rng() % 10 == 0;
        const int64_t start = before ? Allocation::kBeforeWindow : static_cast<int64_t>(rng() % events);
        const int64_t from = before ? 0 : start + 1;
        const bool forever = rng() % 8 == 0 || from >= static_cast<int64_t>(events);
        const int64_t end = forever ? Allocation::kStillAlive
                                    : from + static_cast<int64_t>(rng() % (events - static_cast<size_t>(from)));
        tl.allocations.push_back(alloc(start, end, 1 + static_cast<int64_t>(rng() % 100000)));
        group.push_back(static_cast<int>(rng() % (GroupedSeries::kGroups + 2)) - 1); // -1 and kGroups: left out
    }
    return tl;
}

} // namespace

TEST_CASE("GroupedSeries: no allocations, one initial allocation", "[timelinebands]")
{
    const MemoryTimeline none;
    const GroupedSeries empty(none, [](size_t) { return 0; });
    CHECK(empty.empty());
    CHECK(empty.valueAt(-1) == GroupedSeries::Values{});
    CHECK(empty.valueAt(10) == GroupedSeries::Values{});
    CHECK(empty.valuesAt({}).empty());

    MemoryTimeline one;
    one.allocated.assign(3, 0);
    one.allocations.push_back(alloc(Allocation::kBeforeWindow, Allocation::kStillAlive, 700));
    const GroupedSeries initialOnly(one, [](size_t) { return 3; });
    CHECK_FALSE(initialOnly.empty()); // no steps, but something is alive
    CHECK(initialOnly.initial()[3] == 700);
    CHECK(initialOnly.valueAt(-1)[3] == 700);
    CHECK(initialOnly.valueAt(2)[3] == 700);
}

TEST_CASE("GroupedSeries: a lifetime's edges and groups left out", "[timelinebands]")
{
    MemoryTimeline tl;
    tl.allocated.assign(4, 0);
    tl.allocations = {alloc(0, 2, 10),                                 // group 1, freed at 2
                      alloc(Allocation::kBeforeWindow, 1, 100),        // group 2, freed at 1
                      alloc(1, Allocation::kStillAlive, 1000),         // group 1
                      alloc(0, Allocation::kStillAlive, 5000),         // left out (negative)
                      alloc(0, Allocation::kStillAlive, 7000)};        // left out (>= kGroups)
    const std::vector<int> group = {1, 2, 1, -1, static_cast<int>(GroupedSeries::kGroups)};
    const GroupedSeries s(tl, [&](size_t i) { return group[i]; });
    CHECK(s.valueAt(-1)[1] == 0);
    CHECK(s.valueAt(-1)[2] == 100);
    CHECK(s.valueAt(0)[1] == 10);   // born at the event: counted after it
    CHECK(s.valueAt(1)[1] == 1010);
    CHECK(s.valueAt(1)[2] == 0);    // freed at the event: gone after it
    CHECK(s.valueAt(2)[1] == 1000);
    CHECK(s.valueAt(3)[1] == 1000);
    int64_t sum = 0;
    for (int64_t v : s.valueAt(3))
        sum += v;
    CHECK(sum == 1000); // the two left-out allocations count nowhere
}

TEST_CASE("GroupedSeries equals a linear scan, across checkpoints and from any first event", "[timelinebands]")
{
    std::mt19937_64 rng(7);
    std::vector<int> group;
    const size_t events = 9000;
    const MemoryTimeline tl = randomTimeline(events, 6000, rng, group); // ~11k steps: 3 checkpoints
    const GroupedSeries s(tl, [&](size_t i) { return group[i]; });

    // Every event in one ascending sweep.
    std::vector<int64_t> all;
    for (int64_t e = -1; e < static_cast<int64_t>(events); ++e)
        all.push_back(e);
    const auto values = s.valuesAt(all);
    REQUIRE(values.size() == all.size());
    size_t mismatches = 0;
    for (size_t k = 0; k < all.size(); ++k)
        mismatches += values[k] != bruteValues(tl, group, all[k]);
    CHECK(mismatches == 0);

    // Sparse samples starting anywhere (the chart's visible window): each batch seeks its checkpoint.
    for (int batch = 0; batch < 40; ++batch) {
        std::vector<int64_t> sample;
        int64_t e = static_cast<int64_t>(rng() % events) - 1;
        while (e < static_cast<int64_t>(events) && sample.size() < 50) {
            sample.push_back(e);
            e += 1 + static_cast<int64_t>(rng() % 300);
        }
        const auto got = s.valuesAt(sample);
        for (size_t k = 0; k < sample.size(); ++k) {
            INFO("batch " << batch << " event " << sample[k]);
            CHECK(got[k] == bruteValues(tl, group, sample[k]));
        }
    }
}

TEST_CASE("categorySeries groups by category; allocations without a class are Unknown", "[timelinebands]")
{
    MemoryTimeline tl;
    tl.allocated.assign(2, 0);
    tl.allocations = {alloc(0, Allocation::kStillAlive, 10), alloc(0, Allocation::kStillAlive, 20),
                      alloc(1, Allocation::kStillAlive, 40)};
    std::vector<AllocationClass> classes(2);
    classes[0].category = TensorCategory::Parameter;
    classes[1].category = TensorCategory::Activation;
    const GroupedSeries s = categorySeries(tl, classes);
    const auto v = s.valueAt(1);
    CHECK(v[static_cast<size_t>(TensorCategory::Parameter)] == 10);
    CHECK(v[static_cast<size_t>(TensorCategory::Activation)] == 20);
    CHECK(v[static_cast<size_t>(TensorCategory::Unknown)] == 40);
}

TEST_CASE("filteredLiveBytes equals a linear scan of the selected allocations", "[timelinebands]")
{
    std::mt19937_64 rng(11);
    std::vector<int> group;
    const size_t events = 3000;
    const MemoryTimeline tl = randomTimeline(events, 2000, rng, group);
    auto selected = [&](size_t i) { return i % 3 != 0; };
    const auto curve = filteredLiveBytes(tl, events, selected);
    REQUIRE(curve.size() == events);
    size_t mismatches = 0;
    for (size_t e = 0; e < events; ++e) {
        int64_t expect = 0;
        for (size_t i = 0; i < tl.allocations.size(); ++i)
            if (selected(i) && tl.allocations[i].aliveAfter(static_cast<int64_t>(e)))
                expect += tl.allocations[i].size;
        mismatches += curve[e] != expect;
    }
    CHECK(mismatches == 0);

    CHECK(filteredLiveBytes(tl, 0, selected).empty());
    const auto none = filteredLiveBytes(tl, events, [](size_t) { return false; });
    CHECK(none == std::vector<int64_t>(events, 0));
    // A shorter curve than the trace: lifetimes past its end do not wrap or crash.
    const auto head = filteredLiveBytes(tl, 10, selected);
    CHECK(head == std::vector<int64_t>(curve.begin(), curve.begin() + 10));
}

TEST_CASE("stackStartsWith compares the outermost non-noise frames", "[timelinebands]")
{
    FrameTable ft;
    const uint32_t main = ft.internFrame("train.py", 10, "main");
    const uint32_t step = ft.internFrame("train.py", 20, "step");
    const uint32_t fwd = ft.internFrame("model.py", 30, "forward");
    const uint32_t noise = ft.internFrame("Python/ceval.c", 1, "_PyEval_EvalFrameDefault");
    // Innermost first, as PyTorch writes them.
    const std::vector<uint32_t> frames = {fwd, noise, step, noise, main};
    const uint32_t stack = ft.internStack(frames);

    CHECK(stackStartsWith(ft, stack, {}));
    CHECK(stackStartsWith(ft, stack, {main}));
    CHECK(stackStartsWith(ft, stack, {main, step}));
    CHECK(stackStartsWith(ft, stack, {main, step, fwd}));
    CHECK_FALSE(stackStartsWith(ft, stack, {step}));          // not the outermost
    CHECK_FALSE(stackStartsWith(ft, stack, {main, fwd}));     // skips a frame
    CHECK_FALSE(stackStartsWith(ft, stack, {main, step, fwd, fwd})); // longer than the stack
    CHECK_FALSE(stackStartsWith(ft, FrameTable::kEmptyStack, {main}));
    CHECK(stackStartsWith(ft, FrameTable::kEmptyStack, {}));
}

TEST_CASE("bornInRange: inclusive bounds, birth order, ties in index order", "[timelinebands]")
{
    MemoryTimeline tl;
    tl.allocated.assign(6, 0);
    tl.allocations = {alloc(4, Allocation::kStillAlive, 1), alloc(Allocation::kBeforeWindow, 2, 1),
                      alloc(1, 3, 1), alloc(4, 5, 1), alloc(5, Allocation::kStillAlive, 1),
                      alloc(0, 1, 1)};
    CHECK(bornInRange(tl, 1, 4) == std::vector<size_t>{2, 0, 3});
    CHECK(bornInRange(tl, 0, 5) == std::vector<size_t>{5, 2, 0, 3, 4});
    CHECK(bornInRange(tl, 5, 5) == std::vector<size_t>{4});
    CHECK(bornInRange(tl, -1, -1).empty()); // before the window is no birth
    CHECK(bornInRange(tl, 2, 3).empty());
    CHECK(bornInRange(MemoryTimeline{}, 0, 100).empty());
}

TEST_CASE("maxEventInRange: the first maximum, clamped to the trace", "[timelinebands]")
{
    MemoryTimeline tl;
    tl.allocated = {5, 9, 3, 9, 1};
    CHECK(maxEventInRange(tl, 0, 4) == 1); // ties: the first one
    CHECK(maxEventInRange(tl, 2, 4) == 3);
    CHECK(maxEventInRange(tl, 2, 2) == 2);
    CHECK(maxEventInRange(tl, 4, 4) == 4);
    CHECK(maxEventInRange(tl, -10, 0) == 0);
    CHECK(maxEventInRange(tl, 3, 100) == 3);
    CHECK(maxEventInRange(tl, 4, 1) == 4); // an inverted range is the first event alone
    CHECK(maxEventInRange(MemoryTimeline{}, 0, 10) == -1);
}

TEST_CASE("Python frames only: a stack's Python path kept whole across the C++ between its frames", "[timelinebands]")
{
    FrameTable ft;
    const uint32_t main = ft.internFrame("train.py", 10, "main");
    const uint32_t fwd = ft.internFrame("model.py", 30, "forward");
    const uint32_t op = ft.internFrame("", 0, "at::native::addmm");
    const uint32_t engine = ft.internFrame("", 0, "torch::autograd::Engine::evaluate_function");
    // Innermost first: the allocator's op, the Python forward, the C++ the call went through, main.
    const std::vector<uint32_t> mixedFrames{op, fwd, engine, main}, nativeFrames{op, engine};
    const uint32_t mixed = ft.internStack(mixedFrames);
    const uint32_t native = ft.internStack(nativeFrames);
    CHECK(shownFrames(ft, mixed, false) == std::vector<uint32_t>{main, engine, fwd, op});
    CHECK(shownFrames(ft, mixed, true) == std::vector<uint32_t>{main, fwd});
    // A stack of C++ frames alone keeps them (the backward's gradients).
    CHECK(shownFrames(ft, native, true) == std::vector<uint32_t>{engine, op});
    // The stack filter reads a path in the same terms.
    CHECK(stackStartsWith(ft, mixed, {main, fwd}, true));
    CHECK_FALSE(stackStartsWith(ft, mixed, {main, fwd}, false));
    CHECK(stackStartsWith(ft, mixed, {main, engine}, false));
}
