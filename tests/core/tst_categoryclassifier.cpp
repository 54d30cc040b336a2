// SPDX-License-Identifier: MIT
// CategoryClassifier rule by rule on a phase layout written here, and the category names
// it shares with the profiler formats (tensorcategory.h).
#include "core/analysis/categoryclassifier.h"
#include "core/model/tensorcategory.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace headroom;

namespace {

using C = TensorCategory;
using R = CategoryRule;

/// Phases given per event as letters (S F L B O X); spans and the first forward follow from them.
PhaseAnalysis layout(const std::string& letters)
{
    PhaseAnalysis a;
    for (size_t k = 0; k < letters.size(); ++k) {
        const Phase p = static_cast<Phase>(std::string("SFLBOX").find(letters[k]));
        a.eventPhase.push_back(p);
        a.eventSource.push_back(PhaseSource::Frames);
        if (a.spans.empty() || a.spans.back().phase != p)
            a.spans.push_back({p, static_cast<int64_t>(k), static_cast<int64_t>(k)});
        else
            a.spans.back().endEvent = static_cast<int64_t>(k);
        if (a.firstForwardEvent < 0 && p == Phase::Forward)
            a.firstForwardEvent = static_cast<int64_t>(k);
    }
    if (!letters.empty())
        a.iterations.push_back({0, 0, static_cast<int64_t>(letters.size()) - 1});
    return a;
}

struct Case {
    Snapshot snap;
    DeviceData dev;
    MemoryTimeline tl;

    Case() { snap.devices.emplace_back(); }
    size_t add(int64_t start, int64_t end, uint32_t stack = FrameTable::kEmptyStack)
    {
        Allocation a;
        a.size = 512;
        a.start = start;
        a.end = end;
        a.stack = stack;
        tl.allocations.push_back(a);
        return tl.allocations.size() - 1;
    }
    std::vector<AllocationClass> classify(const std::string& letters)
    {
        return CategoryClassifier::classify(snap, dev, tl, layout(letters));
    }
};

constexpr int64_t kBefore = Allocation::kBeforeWindow;
constexpr int64_t kAlive = Allocation::kStillAlive;

} // namespace

TEST_CASE("TensorCategory: the profiler's export indices and both spellings", "[tensorcategory]")
{
    // `_CATEGORY_TO_INDEX` of export_memory_timeline: raw rows map without a table.
    CHECK(static_cast<int>(C::Parameter) == 0);
    CHECK(static_cast<int>(C::Gradient) == 5);
    CHECK(static_cast<int>(C::Unknown) == kProfilerCategoryCount - 1); // the export's last
    CHECK(static_cast<int>(C::KvCache) == kProfilerCategoryCount);     // Headroom's own, after them
    std::set<std::string> names;
    for (int i = 0; i < kTensorCategoryCount; ++i) {
        const auto c = static_cast<C>(i);
        INFO(categoryName(c));
        CHECK(categoryFromName(categoryName(c)) == c);
        CHECK(categoryFromName(categoryLowerName(c)) == c);
        names.insert(categoryName(c));
    }
    CHECK(names.size() == static_cast<size_t>(kTensorCategoryCount));
    CHECK(std::string(categoryName(C::OptimizerState)) == "OPTIMIZER_STATE");
    CHECK(std::string(categoryLowerName(C::AutogradDetail)) == "autograd_detail");
    CHECK(categoryFromName("Category.ACTIVATION") == C::Activation); // str() of the Python enum
    CHECK(categoryFromName("None") == C::Unknown);
    CHECK(categoryFromName("") == C::Unknown);
    CHECK_FALSE(categoryFromName("weights").has_value());
    CHECK_FALSE(categoryFromName("Category.weights").has_value());
    // Out-of-range values (a corrupt byte) read as unknown instead of past the table.
    CHECK(std::string(categoryName(static_cast<C>(200))) == "UNKNOWN");
    CHECK(std::string(categoryLowerName(static_cast<C>(kTensorCategoryCount))) == "unknown");
}

TEST_CASE("CategoryClassifier: every rule has its own text", "[categoryclassifier]")
{
    std::set<std::string_view> texts;
    for (int r = 0; r <= static_cast<int>(kLastCategoryRule); ++r) {
        const auto text = categoryRuleText(static_cast<R>(r));
        INFO(r);
        CHECK(text != "?");
        texts.insert(text);
    }
    CHECK(texts.size() == static_cast<size_t>(kLastCategoryRule) + 1);
}

TEST_CASE("CategoryClassifier: without trace events everything is unknown", "[categoryclassifier]")
{
    Case c;
    c.add(kBefore, kAlive);
    c.add(kBefore, kAlive);
    const auto out = c.classify("");
    REQUIRE(out.size() == 2);
    for (const AllocationClass& k : out) {
        CHECK(k.category == C::Unknown);
        CHECK(k.rule == R::BeforeWindowOther);
        CHECK(k.birthPhase == Phase::Setup);
    }
    CHECK(Case().classify("FBO").empty()); // no allocations, no classes
}

TEST_CASE("CategoryClassifier: memory from before the window is what a later pass frees at its statement",
          "[categoryclassifier]")
{
    // A window that begins mid-forward: a block from before it is freed at the line that, in
    // the window, frees a forward temporary of its size born after it. Another is freed at the
    // line that also frees a tensor born before it died (one statement frees the loss beside the
    // batch): that one says nothing. A free without a stack says nothing either.
    Case c;
    const std::vector<uint32_t> f1 = {c.snap.frames.internFrame("model.py", 10, "forward")};
    const std::vector<uint32_t> f2 = {c.snap.frames.internFrame("train.py", 20, "train")};
    const uint32_t line1 = c.snap.frames.internStack(f1), line2 = c.snap.frames.internStack(f2);
    c.dev.trace.stack.assign(10, FrameTable::kEmptyStack);
    c.dev.trace.stack[1] = c.dev.trace.stack[5] = line1;
    c.dev.trace.stack[6] = c.dev.trace.stack[7] = line2;
    const size_t early = c.add(kBefore, 1);
    const size_t later = c.add(3, 5);   // born and freed in the forward: a temporary
    const size_t coFreed = c.add(kBefore, 7);
    c.add(2, 6);                        // freed by the same line, born before coFreed died
    const size_t noStack = c.add(kBefore, 4);
    const auto out = c.classify("FFFFFFFFFF");
    CHECK(out[later].category == C::Temporary);
    CHECK(out[early].category == C::Temporary);
    CHECK(out[early].rule == R::BeforeWindowLikeFreeSite);
    CHECK(out[coFreed].rule == R::BeforeWindowOther);
    CHECK(out[noStack].rule == R::BeforeWindowOther);
}

TEST_CASE("CategoryClassifier: allocations from before the window, by where they die", "[categoryclassifier]")
{
    Case c;
    const size_t kept = c.add(kBefore, kAlive);
    const size_t zeroGrad = c.add(kBefore, 3);
    const size_t saved = c.add(kBefore, 1);
    const size_t other = c.add(kBefore, 0);
    const auto out = c.classify("FBBO");
    CHECK(out[kept].category == C::Parameter);
    CHECK(out[kept].rule == R::AliveThroughWindow);
    CHECK(out[zeroGrad].category == C::Gradient);
    CHECK(out[zeroGrad].rule == R::FreedByZeroGrad);
    CHECK(out[saved].category == C::Activation);
    CHECK(out[saved].rule == R::SavedBeforeWindow);
    CHECK(out[other].category == C::Unknown);
    CHECK(out[other].rule == R::BeforeWindowOther);
    for (const AllocationClass& k : out)
        CHECK(k.birthPhase == Phase::Setup);
}

TEST_CASE("CategoryClassifier: setup allocations", "[categoryclassifier]")
{
    Case c;
    FrameTable& ft = c.snap.frames;
    const std::vector<uint32_t> init = {ft.internFrame("model.py", 3, "__init__")};
    const std::vector<uint32_t> to = {ft.internFrame("/usr/lib/torch/nn/modules/module.py", 9, "to")};
    const std::vector<uint32_t> toElsewhere = {ft.internFrame("mylib.py", 9, "to")};
    //                         events: 0 1 2 3 4 5 6
    const std::string letters = "SSFBOSS";
    const size_t module = c.add(0, 3, ft.internStack(init));       // even freed: module frames decide
    const size_t moved = c.add(1, kAlive, ft.internStack(to));
    const size_t notModule = c.add(0, kAlive, ft.internStack(toElsewhere)); // `to` outside module.py
    const size_t kept = c.add(1, kAlive);
    const size_t temp = c.add(0, 1);      // freed inside its setup span
    const size_t input = c.add(1, 2);     // freed after the step began
    const size_t late = c.add(5, kAlive); // after training started
    const size_t lateTemp = c.add(5, 6);
    const auto out = c.classify(letters);
    CHECK(out[module].category == C::Parameter);
    CHECK(out[module].rule == R::ModuleSetupFrames);
    CHECK(out[moved].rule == R::ModuleSetupFrames);
    CHECK(out[notModule].rule == R::SetupBeforeForward);
    CHECK(out[kept].category == C::Parameter);
    CHECK(out[kept].rule == R::SetupBeforeForward);
    CHECK(out[temp].category == C::Temporary);
    CHECK(out[temp].rule == R::SamePhaseTemporary);
    CHECK(out[input].category == C::Input);
    CHECK(out[input].rule == R::SetupFreedLater);
    CHECK(out[late].category == C::Unknown);
    CHECK(out[late].rule == R::SetupKeptAfterTraining);
    CHECK(out[lateTemp].rule == R::SamePhaseTemporary); // the span's last event is still inside it
    CHECK(out[late].birthPhase == Phase::Setup);

    SECTION("without any forward, a kept setup allocation is a parameter")
    {
        Case d;
        const size_t k = d.add(0, kAlive);
        const auto o = d.classify("SSBO");
        CHECK(o[k].category == C::Parameter);
        CHECK(o[k].rule == R::SetupBeforeForward);
    }
}

TEST_CASE("CategoryClassifier: forward and loss allocations", "[categoryclassifier]")
{
    Case c;
    //                         events: 0 1 2 3 4 5
    const std::string letters = "FFLBBO";
    const size_t temp = c.add(0, 1);         // freed within forward
    const size_t saved = c.add(0, 3);        // freed in backward
    const size_t outlives = c.add(1, 5);     // freed in the optimizer
    const size_t kept = c.add(1, kAlive);
    const size_t lossSaved = c.add(2, 4);
    const size_t spansForwardAndLoss = c.add(1, 2); // forward to loss: the logits a loss consumed
    const auto out = c.classify(letters);
    CHECK(out[temp].category == C::Temporary);
    CHECK(out[saved].category == C::Activation);
    CHECK(out[saved].rule == R::ForwardSavedForBackward);
    CHECK(out[outlives].category == C::Activation);
    CHECK(out[outlives].rule == R::ForwardOutlivesPass);
    CHECK(out[kept].rule == R::ForwardOutlivesPass);
    CHECK(out[lossSaved].rule == R::ForwardSavedForBackward);
    CHECK(out[lossSaved].birthPhase == Phase::Loss);
    CHECK(out[spansForwardAndLoss].category == C::Temporary);
    CHECK(out[spansForwardAndLoss].rule == R::ForwardFreedBeforeBackward);
}

TEST_CASE("CategoryClassifier: backward allocations, held for more than half the span or not",
          "[categoryclassifier]")
{
    Case c;
    // A backward span of 10 events (1..10), then the optimizer.
    const std::string letters = "FBBBBBBBBBBO";
    const size_t grad = c.add(2, kAlive);
    const size_t gradFreedLater = c.add(2, 11);
    const size_t half = c.add(1, 6);    // 5 of 10 events: not more than half
    const size_t moreThanHalf = c.add(1, 7);
    const size_t shortTemp = c.add(3, 4);
    const auto out = c.classify(letters);
    CHECK(out[grad].category == C::Gradient);
    CHECK(out[grad].rule == R::BackwardOutlivesPass);
    CHECK(out[gradFreedLater].rule == R::BackwardOutlivesPass);
    CHECK(out[half].category == C::Temporary);
    CHECK(out[half].rule == R::SamePhaseTemporary);
    CHECK(out[moreThanHalf].category == C::AutogradDetail);
    CHECK(out[moreThanHalf].rule == R::BackwardHeldToEnd);
    CHECK(out[shortTemp].category == C::Temporary);
}

TEST_CASE("CategoryClassifier: optimizer and unclassified allocations", "[categoryclassifier]")
{
    Case c;
    const std::string letters = "OOOXX";
    const size_t temp = c.add(0, 2);
    const size_t state = c.add(0, kAlive);
    const size_t stateFreedLater = c.add(1, 3);
    const size_t other = c.add(3, 4);
    const auto out = c.classify(letters);
    CHECK(out[temp].category == C::Temporary);
    CHECK(out[state].category == C::OptimizerState);
    CHECK(out[state].rule == R::OptimizerFirstStepState);
    CHECK(out[stateFreedLater].rule == R::OptimizerFirstStepState);
    CHECK(out[other].category == C::Unknown);
    CHECK(out[other].rule == R::UnknownPhase);
    CHECK(out[other].birthPhase == Phase::Other);
}

TEST_CASE("CategoryClassifier: the profiler's exact category wins where the source has one",
          "[categoryclassifier]")
{
    Case c;
    const size_t exact = c.add(0, 1);            // a forward temporary by the rules
    const size_t outOfRange = c.add(1, kAlive);  // a category byte past the last: the rules decide
    const size_t before = c.add(kBefore, kAlive); // no birth event to read a category from
    const size_t pastTheArray = c.add(3, kAlive);
    c.dev.trace.category = {static_cast<uint8_t>(C::Activation), static_cast<uint8_t>(kTensorCategoryCount),
                            static_cast<uint8_t>(C::Input)};
    const auto out = c.classify("FFFF");
    CHECK(out[exact].category == C::Activation);
    CHECK(out[exact].rule == R::ExactFromProfiler);
    CHECK(out[exact].birthPhase == Phase::Forward); // the phase is still the rules'
    CHECK(out[outOfRange].rule == R::ForwardOutlivesPass);
    CHECK(out[before].rule == R::AliveThroughWindow);
    CHECK(out[pastTheArray].rule == R::ForwardOutlivesPass);
}

TEST_CASE("CategoryClassifier: optimizer state needs a parameter's shape", "[categoryclassifier]")
{
    // Issue 27: what the optimizer step keeps is state only when it is shaped like a parameter
    // (Adam's moments), half or twice one (bf16 model, fp32 state), a quarter (8-bit), or a step
    // counter; a batch made inside a closure is not.
    Case c;
    //                         events: 0 1 2 3 4
    const std::string letters = "SFBOO";
    const size_t param = c.add(Allocation::kBeforeWindow, kAlive);
    c.tl.allocations[param].size = 1 << 20;
    const size_t moment = c.add(3, kAlive);
    c.tl.allocations[moment].size = 1 << 20;
    const size_t wide = c.add(3, kAlive);
    c.tl.allocations[wide].size = 2 << 20;
    const size_t counter = c.add(3, kAlive); // 512 B
    const size_t other = c.add(4, kAlive);
    c.tl.allocations[other].size = 3 << 20;
    const auto out = c.classify(letters);
    CHECK(out[param].category == C::Parameter);
    CHECK(out[moment].category == C::OptimizerState);
    CHECK(out[wide].category == C::OptimizerState);
    CHECK(out[counter].category == C::OptimizerState);
    CHECK(out[other].category == C::Unknown);
    CHECK(out[other].rule == R::OptimizerKeptNotState);
}

TEST_CASE("CategoryClassifier: a forward an OOM cut short reads its lines as a complete step did",
          "[categoryclassifier]")
{
    // docs/categories-and-phases.md, "OOM". Step 0 is whole: a saved activation (stack 1) and
    // the output the next op takes and nothing saves (stack 2, freed in the forward). Step 1 is
    // cut by an OOM at event 8 after making both again: the trace ends with both alive, and the
    // forward rule reads both as activations; step 0 says the second was a temporary.
    Case c;
    //                         events: 0 1 2 3 4 5 6 7 8
    const std::string letters = "FFFBBOFFF";
    c.add(0, 4, 1);
    c.add(1, 2, 2);
    const size_t savedCut = c.add(6, kAlive, 1);
    const size_t tempCut = c.add(7, kAlive, 2);
    c.dev.ooms.push_back({8, 512, 0});
    PhaseAnalysis a = layout(letters);
    a.iterations = {{0, 0, 5}, {1, 6, 8}};
    const auto out = CategoryClassifier::classify(c.snap, c.dev, c.tl, a);
    CHECK(out[savedCut].category == C::Activation);
    CHECK(out[savedCut].rule == R::ForwardOutlivesPass);
    CHECK(out[tempCut].category == C::Temporary);
    CHECK(out[tempCut].rule == R::CutForwardAsCompleteStep);
    // Without the complete step nothing tells them apart.
    a.iterations = {{0, 0, 8}};
    const auto alone = CategoryClassifier::classify(c.snap, c.dev, c.tl, a);
    CHECK(alone[tempCut].rule == R::ForwardOutlivesPass);
}
