// SPDX-License-Identifier: MIT
// Adafactor's factored second moment predicted from the gradients' shapes
// (core/analysis/factoredstate.h), and read from memory alive before the trace
// (core/analysis/prerecording.h) only where the prediction is what the blocks beyond the weights hold.
#include "core/analysis/factoredstate.h"
#include "core/analysis/prerecording.h"

#include <catch2/catch.hpp>

using namespace headroom;

TEST_CASE("Factored state: a row and a column mean per matrix, the whole moment per vector", "[analysis][factoredstate]")
{
    // [256, 384] fp32: rows 256 x 4 = 1 KiB, columns 384 x 4 = 1.5 KiB; [256]: 1 KiB.
    CHECK(predictFactoredState({{{256, 384}, 4}, {{256}, 4}}) == std::map<int64_t, int64_t>{{1024, 2}, {1536, 1}});
    // A convolution [64, 32, 3, 3]: the mean over the last dimension keeps 64*32*3, over the
    // second last 64*32*3 as well (its width and height are both 3).
    CHECK(predictFactoredState({{{64, 32, 3, 3}, 4}}) == std::map<int64_t, int64_t>{{24576, 2}});
    // Autograd makes a bias's gradient [1, 1, n] and views it as [n]: a vector, one block.
    CHECK(predictFactoredState({{{1, 1, 300}, 4}}) == std::map<int64_t, int64_t>{{1536, 1}});
    // Rounded as the allocator rounds: anything under 512 bytes is one smallest block.
    CHECK(predictFactoredState({{{8, 16}, 2}}) == std::map<int64_t, int64_t>{{512, 2}});
    CHECK(dtypeElementBytes("torch.bfloat16") == 2);
    CHECK(dtypeElementBytes("float32") == 4);
    CHECK(dtypeElementBytes("complex64") == 0);
}

namespace {

/// Recorded after an Adafactor-like step: a weight [256, 384] and its bias [256], their
/// gradients born in the backward with the recorder's shapes, the factors alive before the trace.
struct LateAdafactor {
    FrameTable ft;
    MemoryTimeline tl;
    PhaseAnalysis ph;
    RecordedTensors tensors;
    std::vector<AllocationClass> classes;
    static constexpr int32_t kBefore = int32_t(Allocation::kBeforeWindow), kAlive = int32_t(Allocation::kStillAlive);

    size_t before(int64_t size)
    {
        tl.allocations.push_back({0x1000 + tl.allocations.size() * 0x10000, size, kBefore, kAlive, 0});
        classes.push_back({TensorCategory::Parameter, CategoryRule::AliveThroughWindow, Phase::Setup});
        return tl.allocations.size() - 1;
    }
    void gradient(int64_t size, std::vector<int64_t> shape, int32_t event)
    {
        tl.allocations.push_back({0x900000 + uint64_t(event) * 0x10000, size, event, kAlive, 0});
        classes.push_back({TensorCategory::Gradient, CategoryRule::BackwardOutlivesPass, Phase::Backward});
        RecordedTensor t;
        t.shape = std::move(shape);
        t.dtype = ft.strings().intern("float32");
        tensors.emplace_back(uint32_t(event), t);
    }
    LateAdafactor()
    {
        ph.eventPhase = {Phase::Backward, Phase::Backward, Phase::Optimizer};
        ph.spans = {{Phase::Backward, 0, 1}, {Phase::Optimizer, 2, 2}};
    }
    int64_t bytes(TensorCategory c) const
    {
        int64_t n = 0;
        for (size_t i = 0; i < classes.size(); ++i)
            n += tl.allocations[i].start == kBefore && classes[i].category == c ? tl.allocations[i].size : 0;
        return n;
    }
};

} // namespace

TEST_CASE("Factored state from before the trace: the predicted blocks are state, a frozen vector stays a weight",
          "[analysis][prerecording][factoredstate]")
{
    LateAdafactor t;
    t.before(393216); // the weight
    t.before(1024);   // the bias
    t.before(1024);   // a frozen vector of the bias's size (a buffer)
    t.before(1024);   // the weight's row factor
    t.before(1536);   // its column factor: a size no gradient has
    t.before(1024);   // the bias's whole second moment
    t.gradient(393216, {256, 384}, 0);
    t.gradient(1024, {1, 256}, 1);
    const PreRecording r = readPreRecording(t.ft, t.tl, t.ph, t.classes, t.tensors);
    CHECK(r.factoredBlocks == 3);
    CHECK(r.factoredBytes == 1024 + 1536 + 1024);
    CHECK(r.factoredElementBytes == 4);
    CHECK(t.bytes(TensorCategory::OptimizerState) == 3584);
    CHECK(t.bytes(TensorCategory::Parameter) == 393216 + 2 * 1024);
    CHECK(std::count_if(t.classes.begin(), t.classes.end(), [](const AllocationClass& c) {
              return c.rule == CategoryRule::BeforeWindowFactoredState;
          }) == 3);
}

TEST_CASE("Factored state: nothing is read where the prediction does not fit or says nothing a weight could not",
          "[analysis][prerecording][factoredstate]")
{
    SECTION("a predicted factor is missing: no reading (and no step temporaries for the by-size rule)")
    {
        LateAdafactor t;
        t.before(393216);
        t.before(1024);
        t.before(1536); // the column factor, but no row factor and no bias moment
        t.gradient(393216, {256, 384}, 0);
        t.gradient(1024, {256}, 1);
        const PreRecording r = readPreRecording(t.ft, t.tl, t.ph, t.classes, t.tensors);
        CHECK(r.factoredBlocks == 0);
        CHECK(t.bytes(TensorCategory::Parameter) == 393216 + 1024 + 1536);
    }
    SECTION("every predicted block shares a size with a weight: read only where it explains every one")
    {
        // [256, 256] and [256]: factors 1 KiB x 3, all a bias's size. With the bias, four 1 KiB
        // blocks are exactly the prediction; a fifth (a buffer) leaves it unexplained.
        for (const int biasSized : {4, 5}) {
            LateAdafactor t;
            t.before(262144);
            for (int i = 0; i < biasSized; ++i)
                t.before(1024);
            t.gradient(262144, {256, 256}, 0);
            t.gradient(1024, {256}, 1);
            const PreRecording r = readPreRecording(t.ft, t.tl, t.ph, t.classes, t.tensors);
            INFO(biasSized);
            CHECK(r.factoredBlocks == (biasSized == 4 ? 3 : 0));
            CHECK(t.bytes(TensorCategory::OptimizerState) == (biasSized == 4 ? 3 * 1024 : 0));
        }
    }
    SECTION("no recorded shapes (a plain GPU snapshot): nothing to predict from")
    {
        LateAdafactor t;
        t.before(393216);
        t.before(1024);
        t.before(1024);
        t.before(1536);
        t.before(1024);
        t.gradient(393216, {256, 384}, 0);
        t.gradient(1024, {256}, 1);
        const PreRecording r = readPreRecording(t.ft, t.tl, t.ph, t.classes, {});
        CHECK(r.factoredBlocks == 0);
    }
}
