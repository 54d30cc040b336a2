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
