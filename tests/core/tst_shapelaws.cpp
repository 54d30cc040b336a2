// SPDX-License-Identifier: MIT
// Recorded tensor shapes as evidence for the laws (docs/whatif-model.md, "Laws"): the marks
// the recorder writes, what they allow, and a CPU recording of real PyTorch with them.
#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/model/recordedtensors.h"
#include "core/whatif/laws/allocationlaw.h"
#include "core/whatif/laws/shapelaw.h"
#include "core/whatif/replay/traceprojector.h"
#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/projection/whatifprojection.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

RecordedTensor tensor(std::vector<int64_t> shape, uint32_t batch, uint32_t seq)
{
    RecordedTensor t;
    t.shape = std::move(shape);
    t.batchDims = batch;
    t.seqDims = seq;
    t.kind = RecordedTensor::Kind::Activation;
    return t;
}

uint8_t bit(SizeLaw l) { return uint8_t(1u << unsigned(l)); }

} // namespace

TEST_CASE("A recorded shape's marks give the law of its growth", "[whatif][shapes]")
{
    // b0 = 4, s0 = 128
    CHECK(shapeLaws(tensor({4, 128, 512}, 0b1, 0b10), 4, 128) == bit(SizeLaw::Tokens));
    CHECK(shapeLaws(tensor({4, 8, 128, 128}, 0b1, 0b1100), 4, 128) == bit(SizeLaw::TokensBySeq));
    CHECK(shapeLaws(tensor({128, 128}, 0, 0b11), 4, 128) == bit(SizeLaw::SeqSquared));
    CHECK(shapeLaws(tensor({4, 10}, 0b1, 0), 4, 128) == bit(SizeLaw::Batch));
    // A flattened [b*s, d] counts as both.
    CHECK(shapeLaws(tensor({512, 64}, 0, 0), 4, 128) == bit(SizeLaw::Tokens));
    // No mark: nothing to say (a weight, or a dimension the recorder could not mark).
    CHECK(shapeLaws(tensor({512, 512}, 0, 0), 4, 32) == 0);
    // b0 == s0: a dimension marked both ways is either.
    CHECK(shapeLaws(tensor({64, 64, 256}, 0b11, 0b11), 64, 64) == (bit(SizeLaw::Tokens) | bit(SizeLaw::SeqSquared)));
    // Marks by coincidence that give no law the replay knows (two heads at micro-batch 2): none.
    CHECK(shapeLaws(tensor({2, 2, 64, 64}, 0b11, 0b1100), 2, 64) == 0);
}

TEST_CASE("Recorded shapes narrow the laws of a CPU recording and keep its projection", "[whatif][shapes][cpu]")
{
    // tests/data/cpu/llama_base_shapes.pickle: llama_base recorded again with the recorder's
    // headroom_tensor keys. The shapes settle what they can (activations [b, s, d]); the
    // scores [b, h, s, s] with h = b = 2 stay open (their marks give b^2 s^2).
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto shaped = Loader::load(dir + "llama_base_shapes.pickle");
    auto plain = Loader::load(dir + "llama_base.pickle");
    auto seq2 = Loader::load(dir + "llama_seq2.pickle");
    REQUIRE_FALSE(shaped->snapshot.devices[0].trace.tensors.empty());
    CHECK(plain->snapshot.devices[0].trace.tensors.empty());
    const Calibration withShapes = calibrate(*shaped, 0, analyzeDevice(*shaped, 0), {});
    const Calibration without = calibrate(*plain, 0, analyzeDevice(*plain, 0), {});
    REQUIRE(withShapes.baseline.trace);
    CHECK(withShapes.baseline.trace->laws().shapeRead() > 0);
    CHECK(without.baseline.trace->laws().shapeRead() == 0);
    auto at128 = [](const Calibration& c) {
        LeverConfig t = c.baseline.config;
        t.seq = 128;
        return project(c.baseline, t, WhatIfConstants{}, *devicePreset("80gib"));
    };
    const Projection a = at128(withShapes), b = at128(without);
    const double measured = double(seq2->timelines[0].peakAllocated);
    CHECK(a.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(a.peakAllocatedLow <= measured);
    CHECK(a.peakAllocatedHigh >= measured);
    CHECK(a.peakAllocatedHigh - a.peakAllocatedLow <= b.peakAllocatedHigh - b.peakAllocatedLow);
}

TEST_CASE("Shapes over the stated sequence plus a class token give the tokens their laws", "[whatif][shapes]")
{
    // s0 = 64 patches and a class token: scores [b, h, 65, 65], activations [b, 65, d].
    std::vector<std::pair<uint32_t, RecordedTensor>> tensors;
    tensors.push_back({1, tensor({2, 4, 65, 65}, 0b1, 0)});
    tensors.push_back({2, tensor({2, 65, 64}, 0b1, 0b100)}); // d = 64 marked as s0 by coincidence
    CHECK(shapeTokenOffset(tensors, 64) == 1);
    CHECK(offsetShapeLaws(tensors[0].second, 2, 64, 1) == bit(SizeLaw::TokensBySeq));
    CHECK(offsetShapeLaws(tensors[1].second, 2, 64, 1) == bit(SizeLaw::Tokens));
    CHECK(sizeLawName(SizeLaw::TokensBySeq, 1) == "b*(s+1)^2");
    CHECK(sizeLawName(SizeLaw::Constant, 1) == "constant");
    // No square over s0 + c: no offset (a width of 65 alone says nothing of the tokens).
    tensors.erase(tensors.begin());
    CHECK(shapeTokenOffset(tensors, 64) == 0);
}

TEST_CASE("The CPU recorder's op graph links each allocation to its op's inputs", "[shapes][cpu]")
{
    // tests/data/cpu/decoder_infer_graph.pickle: every entry the mode saw names its ATen op;
    // the first addmm (blocks.0's qkv projection) points back at its bias, its input and its
    // weight, each an entry made before it.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto file = Loader::load(dir + "decoder_infer_graph.pickle");
    const TraceEvents& ev = file->snapshot.devices.at(0).trace;
    const StringPool& strings = file->snapshot.frames.strings();
    REQUIRE_FALSE(ev.tensors.empty());
    size_t withOp = 0;
    const RecordedTensor* addmm = nullptr;
    uint32_t at = 0;
    for (const auto& [event, t] : ev.tensors) {
        withOp += t.hasOp;
        for (uint32_t back : t.inputs) {
            REQUIRE(back <= event);
            CHECK(ev.action[event - back] == TraceAction::Alloc);
        }
        if (!addmm && t.hasOp && strings.get(t.op) == "aten::addmm") {
            addmm = &t;
            at = event;
        }
    }
    CHECK(withOp == ev.tensors.size());
    REQUIRE(addmm);
    CHECK(strings.get(addmm->module) == "blocks.blocks.0.attn.qkv");
    CHECK(addmm->inputs.size() == 3);
    CHECK(addmm->saves.empty()); // under no_grad nothing is saved
    const RecordedTensor* weight = recordedTensorAt(ev.tensors, at - addmm->inputs[2]);
    REQUIRE(weight);
    CHECK(weight->kind == RecordedTensor::Kind::Parameter);
}

TEST_CASE("A mark of a model width's size is the width or the dimension: both readings", "[whatif][shapes]")
{
    // d_model = s0 = 64, b0 = 2: [b, s, d] is marked [b, s, s], as a score of [b, s, s] is.
    const RecordedTensor act = tensor({2, 64, 64}, 0b1, 0b110);
    CHECK(shapeLaws(act, 2, 64) == bit(SizeLaw::TokensBySeq));
    const MarkCoincidence seqIsWidth{false, true};
    CHECK(shapeLaws(act, 2, 64, seqIsWidth) ==
          (bit(SizeLaw::Batch) | bit(SizeLaw::Tokens) | bit(SizeLaw::TokensBySeq)));
    // The width is the dimension the recorded op's weight has: its last.
    CHECK(shapeLawsWithWidth(act, 2, 64, 2) == bit(SizeLaw::Tokens));
    // A mark of the other value keeps its one reading; a flattened [b*s, d] is still b*s.
    CHECK(shapeLaws(tensor({2, 64, 32}, 0b1, 0b10), 2, 64, MarkCoincidence{true, false}) ==
          (bit(SizeLaw::Sequence) | bit(SizeLaw::Tokens)));
    CHECK(shapeLaws(tensor({128, 48}, 0, 0), 2, 64, seqIsWidth) == bit(SizeLaw::Tokens));
}

TEST_CASE("A width equal to the sequence leaves the shapes open, and the op's weight reads it", "[whatif][shapes][cpu]")
{
    // tests/data/cpu/gqa4d_{base,seq4}.pickle (record_gqa4d.py): a grouped-query llama at
    // d_model 64 = sequence 64, 4 query heads x 64 = 4 x d_model. Read by their marks alone,
    // every [b, s, d] activation was b*s^2 and sequence x4 projected +22.4% with the band
    // missing; the scores' [b, h, s, s] and the activations' [b, s, d] shapes allow each
    // other's reading. The embedding's and the Linears' outputs take their last dimension
    // from the weight they were made with (read b*s), what a shape-preserving op made from
    // them follows (the recorder's links), the softmax's stack reads the scores.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto base = Loader::load(dir + "gqa4d_base.pickle");
    auto seq4 = Loader::load(dir + "gqa4d_seq4.pickle");
    const Calibration cal = calibrate(*base, 0, analyzeDevice(*base, 0), {});
    REQUIRE(cal.baseline.trace);
    CHECK(cal.baseline.trace->laws().markCoincidence().seq);
    CHECK_FALSE(cal.baseline.trace->laws().markCoincidence().batch);
    CHECK_FALSE(cal.baseline.config.flashAttention);
    LeverConfig target = cal.baseline.config;
    target.seq *= 4;
    const Projection p = project(cal.baseline, target, WhatIfConstants{}, *devicePreset("80gib"));
    REQUIRE(p.replayed);
    const double measured = double(seq4->timelines[0].peakAllocated);
    CHECK(p.peakAllocated == Approx(measured).epsilon(0.01));
    CHECK(p.peakAllocatedLow <= measured);
    CHECK(p.peakAllocatedHigh >= measured);
    // The band keeps the scores read as b*s (one of their s a width): the shapes allow it.
    CHECK(p.peakAllocatedLow < 0.7 * p.peakAllocated);
    const bool shapeOpen = std::any_of(p.ambiguities.begin(), p.ambiguities.end(),
                                       [](const ProjectedAmbiguity& a) { return a.shapeRecorded; });
    CHECK(shapeOpen);
}

TEST_CASE("A position table's rows are no width an output shows", "[whatif][shapes][cpu]")
{
    // The decoder's learned positions are a [max_seq = 128, 64] table at sequence 128 (its
    // forward recorded with the op graph): no output's last dimension is 128 by a weight, so
    // its marks stay the sequence. The llama's k and v projections are 64 wide at sequence 64.
    const std::string dir = std::string(HEADROOM_SOURCE_DIR) + "/tests/data/cpu/";
    auto decoder = Loader::load(dir + "decoder_infer_graph.pickle");
    const Calibration cal = calibrate(*decoder, 0, analyzeDevice(*decoder, 0), {});
    REQUIRE(cal.baseline.trace);
    CHECK_FALSE(cal.baseline.trace->laws().markCoincidence().seq);
    auto llama = Loader::load(dir + "llama_graph.pickle");
    const Calibration lc = calibrate(*llama, 0, analyzeDevice(*llama, 0), {});
    REQUIRE(lc.baseline.trace);
    CHECK(lc.baseline.trace->laws().markCoincidence().seq);
}
