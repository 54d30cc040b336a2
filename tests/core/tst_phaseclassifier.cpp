// SPDX-License-Identifier: MIT
// PhaseClassifier on small traces built here: which source decides an event's phase
// (annotation, frames, neighbours), the spans and the iterations.
#include "core/analysis/phaseclassifier.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace headroom;

namespace {

/// A snapshot with one device and the stacks a training step's frames make.
struct Trace {
    Snapshot snap;
    uint32_t forward, loss, backward, optim, setup, loop, cppOnly;

    Trace()
    {
        snap.devices.emplace_back();
        FrameTable& ft = snap.frames;
        const uint32_t main = ft.internFrame("train.py", 1, "main");
        auto stackOf = [&](std::initializer_list<uint32_t> inner) {
            std::vector<uint32_t> ids(inner);
            ids.push_back(main); // innermost first, the loop outermost
            return ft.internStack(ids);
        };
        forward = stackOf({ft.internFrame("model.py", 10, "forward")});
        loss = stackOf({ft.internFrame("torch/nn/modules/loss.py", 20, "forward")});
        backward = stackOf({ft.internFrame("torch/_tensor.py", 30, "backward")});
        optim = stackOf({ft.internFrame("torch/optim/adam.py", 40, "step")});
        setup = stackOf({ft.internFrame("torch/utils/data/dataloader.py", 50, "__next__")});
        loop = stackOf({}); // the training loop's own line: no rule matches
        const std::vector<uint32_t> cpp = {ft.internFrame("", 0, "at::native::empty_cuda")};
        cppOnly = ft.internStack(cpp); // frames, but no Python and no rule
    }
    DeviceData& dev() { return snap.devices[0]; }
    void add(uint32_t stack, int64_t timeUs = TraceEvents::kNoTime)
    {
        dev().trace.append({.action = TraceAction::Alloc, .size = 512, .timeUs = timeUs, .stack = stack});
        if (timeUs != TraceEvents::kNoTime)
            dev().trace.anyTime = true;
    }
    void annotate(const std::string& name, int64_t startUs, int64_t endUs)
    {
        snap.annotations.push_back({name, true, 0, startUs});
        snap.annotations.push_back({name, false, 0, endUs});
    }
    PhaseAnalysis classify() const { return PhaseClassifier::classify(snap, snap.devices[0]); }
};

std::string phases(const PhaseAnalysis& a)
{
    std::string s;
    for (Phase p : a.eventPhase)
        s += "SFLBOX"[static_cast<size_t>(p)];
    return s;
}

Phase stackPhase(const Trace& t, uint32_t stack, bool& matched)
{
    return PhaseClassifier::phaseOfStack(t.snap.frames, stack, &matched);
}

} // namespace

TEST_CASE("PhaseClassifier: a device without events", "[phaseclassifier]")
{
    Trace t;
    const PhaseAnalysis a = t.classify();
    CHECK(a.eventPhase.empty());
    CHECK(a.spans.empty());
    CHECK(a.iterations.empty());
    CHECK(a.firstForwardEvent == -1);
    CHECK(a.iterationOf(0) == -1);
    CHECK(a.spanOf(0) == nullptr);
}

TEST_CASE("PhaseClassifier::phaseOfStack: one rule per phase, the optimizer first", "[phaseclassifier]")
{
    Trace t;
    bool matched = false;
    CHECK(stackPhase(t, t.forward, matched) == Phase::Forward);
    CHECK(matched);
    CHECK(stackPhase(t, t.loss, matched) == Phase::Loss); // a forward inside loss.py is the loss
    CHECK(stackPhase(t, t.backward, matched) == Phase::Backward);
    CHECK(stackPhase(t, t.optim, matched) == Phase::Optimizer);
    CHECK(stackPhase(t, t.setup, matched) == Phase::Setup);
    CHECK(stackPhase(t, t.loop, matched) == Phase::Other);
    CHECK_FALSE(matched);
    CHECK(stackPhase(t, FrameTable::kEmptyStack, matched) == Phase::Other);
    CHECK_FALSE(matched);

    // clip_grad_norm_ called from a module's forward chain: still the optimizer.
    FrameTable& ft = t.snap.frames;
    const std::vector<uint32_t> both = {ft.internFrame("torch/nn/utils/clip_grad.py", 5, "clip_grad_norm_"),
                                        ft.internFrame("model.py", 10, "forward")};
    CHECK(stackPhase(t, ft.internStack(both), matched) == Phase::Optimizer);
    // A C++ autograd node is backward even without Python frames.
    const std::vector<uint32_t> node = {ft.internFrame("", 0, "torch::autograd::generated::MmBackward0::apply")};
    CHECK(stackPhase(t, ft.internStack(node), matched) == Phase::Backward);
}

TEST_CASE("PhaseClassifier: a single event", "[phaseclassifier]")
{
    Trace t;
    t.add(t.forward);
    const PhaseAnalysis a = t.classify();
    CHECK(phases(a) == "F");
    CHECK(a.eventSource[0] == PhaseSource::Frames);
    REQUIRE(a.spans.size() == 1);
    CHECK(a.spans[0].startEvent == 0);
    CHECK(a.spans[0].endEvent == 0);
    REQUIRE(a.iterations.size() == 1);
    CHECK(a.iterationSource == "single window");
    CHECK(a.firstForwardEvent == 0);
}

TEST_CASE("PhaseClassifier: events without frames take the phase around them", "[phaseclassifier]")
{
    SECTION("nothing known at all")
    {
        Trace t;
        t.add(FrameTable::kEmptyStack);
        t.add(FrameTable::kEmptyStack);
        const PhaseAnalysis a = t.classify();
        CHECK(phases(a) == "XX");
        CHECK(a.eventSource[1] == PhaseSource::Default);
        CHECK(a.iterationSource == "single window");
    }
    SECTION("a gap inside one phase, a gap before the first known event")
    {
        Trace t;
        t.add(FrameTable::kEmptyStack);
        t.add(t.forward);
        t.add(FrameTable::kEmptyStack);
        t.add(t.forward);
        const PhaseAnalysis a = t.classify();
        CHECK(phases(a) == "FFFF");
        CHECK(a.eventSource[0] == PhaseSource::Neighbours);
        CHECK(a.eventSource[2] == PhaseSource::Neighbours);
        CHECK(a.firstForwardEvent == 0);
    }
    SECTION("a gap between forward and the optimizer is backward on the autograd thread")
    {
        Trace t;
        t.add(t.forward);
        t.add(FrameTable::kEmptyStack);
        t.add(FrameTable::kEmptyStack);
        t.add(t.optim);
        t.add(FrameTable::kEmptyStack); // trailing: the phase before it
        CHECK(phases(t.classify()) == "FBBOO");
    }
    SECTION("a gap between backward and the optimizer keeps the phase before it")
    {
        Trace t;
        t.add(t.backward);
        t.add(FrameTable::kEmptyStack);
        t.add(t.optim);
        CHECK(phases(t.classify()) == "BBO");
    }
}

TEST_CASE("PhaseClassifier: the training loop's own code is loss between forward and backward, else setup",
          "[phaseclassifier]")
{
    Trace t;
    t.add(t.forward);
    t.add(t.loop);     // 1: logits.float() on the loss line
    t.add(t.backward);
    t.add(t.loop);     // 3: between backward and the optimizer: loop code, setup
    t.add(t.optim);
    t.add(t.loop);     // 5: between two optimizer events: the trainer's code between steps, setup
    t.add(t.optim);
    t.add(t.cppOnly);  // 7: C++ frames only, no rule: treated as loop code too
    const PhaseAnalysis a = t.classify();
    CHECK(phases(a) == "FLBSOSOS");
    CHECK(a.eventSource[1] == PhaseSource::Frames);
    CHECK(a.eventSource[5] == PhaseSource::Frames);
}

TEST_CASE("PhaseClassifier: annotation windows decide before frames, inner windows win", "[phaseclassifier]")
{
    Trace t;
    for (int i = 0; i < 6; ++i)
        t.add(t.optim, 100 + i * 10); // frames say optimizer everywhere
    t.annotate("## forward ##", 100, 150);  // events 0..5
    t.annotate("## backward ##", 120, 130); // events 2..3: starts later, overwrites
    t.annotate("unrelated label", 100, 150); // no phase: ignored
    t.snap.annotations.push_back({"## loss ##", true, 1, 100}); // another device's window
    t.snap.annotations.push_back({"## loss ##", false, 1, 150});
    const PhaseAnalysis a = t.classify();
    CHECK(phases(a) == "FFBBFF");
    for (PhaseSource s : a.eventSource)
        CHECK(s == PhaseSource::Annotation);

    SECTION("without times the annotations cannot be placed")
    {
        Trace u;
        u.add(u.optim);
        u.annotate("## forward ##", 0, 1000);
        CHECK(phases(u.classify()) == "O");
    }
}

TEST_CASE("PhaseClassifier: a window nested in another that opens in the same microsecond still wins",
          "[phaseclassifier]")
{
    // record_function blocks opened back to back share a time stamp at µs resolution. The
    // inner window closes first, so it is listed first; it must still be applied last.
    Trace t;
    for (int i = 0; i < 6; ++i)
        t.add(t.forward, 100 + i * 10);
    t.snap.annotations.push_back({"## forward ##", true, 0, 100});
    t.snap.annotations.push_back({"## loss ##", true, 0, 100});
    t.snap.annotations.push_back({"## loss ##", false, 0, 120});
    t.snap.annotations.push_back({"## forward ##", false, 0, 150});
    CHECK(phases(t.classify()) == "LLLFFF");
}

TEST_CASE("PhaseClassifier: spans are maximal runs; iterations start at the forward after an optimizer step",
          "[phaseclassifier]")
{
    Trace t;
    for (uint32_t s : {t.forward, t.forward, t.backward, t.optim, // iteration 0: events 0..3
                       t.setup, t.forward, t.backward, t.optim,   // 1: begins with its data step (4)
                       t.forward, t.loss, t.backward, t.optim})   // 2: 8..11
        t.add(s);
    const PhaseAnalysis a = t.classify();
    CHECK(phases(a) == "FFBOSFBOFLBO");
    REQUIRE(a.spans.size() == 11);
    CHECK(a.spans[0].phase == Phase::Forward);
    CHECK(a.spans[0].endEvent == 1);
    CHECK(a.spans[10].startEvent == 11);
    CHECK(a.spans[10].endEvent == 11);
    CHECK(a.spanOf(1) == &a.spans[0]);
    CHECK(a.spanOf(11) == &a.spans[10]);
    CHECK(a.spanOf(4)->phase == Phase::Setup);
    CHECK(a.spanOf(-1) == nullptr);

    CHECK(a.iterationSource == "optimizer steps");
    REQUIRE(a.iterations.size() == 3);
    CHECK(a.iterations[0].startEvent == 0);
    CHECK(a.iterations[0].endEvent == 3);
    CHECK(a.iterations[1].startEvent == 4);
    CHECK(a.iterations[1].endEvent == 7);
    CHECK(a.iterations[2].startEvent == 8);
    CHECK(a.iterations[2].endEvent == 11);
    CHECK(a.iterationOf(0) == 0);
    CHECK(a.iterationOf(3) == 0);
    CHECK(a.iterationOf(4) == 1);
    CHECK(a.iterationOf(11) == 2);
    CHECK(a.iterationOf(1000) == 2);
    CHECK(a.firstForwardEvent == 0);
}

TEST_CASE("PhaseClassifier: without an optimizer an iteration ends with its backward", "[phaseclassifier]")
{
    Trace t;
    for (uint32_t s : {t.forward, t.backward, t.backward, t.forward, t.backward})
        t.add(s);
    const PhaseAnalysis a = t.classify();
    CHECK(a.iterationSource == "forward starts");
    REQUIRE(a.iterations.size() == 2);
    CHECK(a.iterations[1].startEvent == 3);
}

TEST_CASE("PhaseClassifier: ProfilerStep annotations number the iterations", "[phaseclassifier]")
{
    Trace t;
    for (int i = 0; i < 6; ++i)
        t.add(t.forward, 100 + i * 10);
    t.annotate("ProfilerStep#1", 110, 125); // events 1..2; the first iteration starts at event 0
    t.annotate("ProfilerStep#2", 130, 150); // events 3..5
    const PhaseAnalysis a = t.classify();
    CHECK(phases(a) == "FFFFFF"); // a step window says nothing about the phase
    CHECK(a.iterationSource == "annotations");
    REQUIRE(a.iterations.size() == 2);
    CHECK(a.iterations[0].startEvent == 0);
    CHECK(a.iterations[0].endEvent == 2);
    CHECK(a.iterations[1].startEvent == 3);
    CHECK(a.iterations[1].endEvent == 5);

    SECTION("one step window is not enough to number iterations")
    {
        Trace u;
        for (int i = 0; i < 3; ++i)
            u.add(u.forward, 100 + i * 10);
        u.annotate("ProfilerStep#1", 100, 120);
        CHECK(u.classify().iterationSource == "single window");
    }
}

TEST_CASE("PhaseClassifier::phaseOfStack: the innermost frame decides, not an outer optimizer.step", "[phaseclassifier]")
{
    // Lightning runs the forward and the backward inside optimizer.step(closure): adam.py's
    // `step` is an outer frame of every allocation of the step (issue 27).
    Trace t;
    FrameTable& ft = t.snap.frames;
    const uint32_t step = ft.internFrame("torch/optim/adam.py", 40, "step");
    const uint32_t closure = ft.internFrame("lightning/pytorch/loops/optimization/automatic.py", 140, "closure");
    const uint32_t trainingStep = ft.internFrame("train.py", 12, "training_step");
    bool matched = false;
    const std::vector<uint32_t> forward = {ft.internFrame("vision_transformer.py", 174, "forward"), trainingStep, closure,
                                           step};
    CHECK(stackPhase(t, ft.internStack(forward), matched) == Phase::Forward);
    const std::vector<uint32_t> backward = {ft.internFrame("torch/_tensor.py", 30, "backward"), closure, step};
    CHECK(stackPhase(t, ft.internStack(backward), matched) == Phase::Backward);
    const std::vector<uint32_t> loss = {ft.internFrame("torch/nn/functional.py", 3000, "mse_loss"), trainingStep,
                                        closure, step};
    CHECK(stackPhase(t, ft.internStack(loss), matched) == Phase::Loss);
    const std::vector<uint32_t> update = {ft.internFrame("torch/optim/adam.py", 300, "_single_tensor_adam"), step,
                                          ft.internFrame("train.py", 20, "optimizer_step")};
    CHECK(stackPhase(t, ft.internStack(update), matched) == Phase::Optimizer);
    // A checkpoint's recomputed forward runs under autograd's engine: backward.
    const std::vector<uint32_t> recompute = {ft.internFrame("model.py", 10, "forward"),
                                             ft.internFrame("torch/utils/checkpoint.py", 100, "backward"),
                                             ft.internFrame("", 0, "torch::autograd::Engine::evaluate_function")};
    CHECK(stackPhase(t, ft.internStack(recompute), matched) == Phase::Backward);
    // An object built inside a forward (a distribution's __init__) is the forward's.
    const std::vector<uint32_t> built = {ft.internFrame("torch/distributions/normal.py", 50, "__init__"),
                                         ft.internFrame("model.py", 11, "forward")};
    CHECK(stackPhase(t, ft.internStack(built), matched) == Phase::Forward);
}

TEST_CASE("PhaseClassifier: an optimizer window that ran a closure yields to the frames inside it", "[phaseclassifier]")
{
    Trace t;
    t.add(t.setup, 90);
    t.add(t.forward, 100);
    t.add(t.forward, 110);
    t.add(t.loss, 120);
    t.add(FrameTable::kEmptyStack, 130); // the autograd thread under stacks='python'
    t.add(t.backward, 140);
    t.add(t.optim, 150);
    t.add(FrameTable::kEmptyStack, 160); // a frameless event after the optimizer's own update
    t.annotate("Optimizer.step#AdamW.step", 95, 165);
    const PhaseAnalysis a = t.classify();
    CHECK(phases(a) == "SFFLBBOO");
    CHECK(a.eventSource[1] == PhaseSource::Frames);
    CHECK(a.eventSource[6] == PhaseSource::Annotation);

    SECTION("a window of the optimizer's own work keeps its frameless events")
    {
        Trace u;
        u.add(u.forward, 100);
        u.add(u.optim, 150);
        u.add(FrameTable::kEmptyStack, 160);
        u.annotate("Optimizer.step#AdamW.step", 140, 165);
        CHECK(phases(u.classify()) == "FOO");
    }
}

TEST_CASE("PhaseClassifier: a worker pool's __init__ frames are not a model being built", "[phaseclassifier]")
{
    // A step run in a multiprocessing.Pool worker has pool.py and popen_fork.py __init__ frames
    // under every stack; they said "setup" (and "parameter") for the whole step.
    Trace t;
    FrameTable& ft = t.snap.frames;
    const std::vector<uint32_t> batch = {ft.internFrame("cpu_models.py", 230, "make_batch"),
                                         ft.internFrame("train.py", 40, "record"),
                                         ft.internFrame("/usr/lib/python3.11/multiprocessing/popen_fork.py", 19, "__init__"),
                                         ft.internFrame("/usr/lib/python3.11/multiprocessing/pool.py", 215, "__init__")};
    bool matched = true;
    CHECK(stackPhase(t, ft.internStack(batch), matched) == Phase::Other);
    CHECK_FALSE(matched);
    const std::vector<uint32_t> module = {ft.internFrame("torch/nn/modules/linear.py", 96, "__init__"),
                                          ft.internFrame("/usr/lib/python3.11/multiprocessing/pool.py", 215, "__init__")};
    CHECK(stackPhase(t, ft.internStack(module), matched) == Phase::Setup);
}

TEST_CASE("PhaseClassifier::phaseOfStack: autograd called by a forward or a loss is theirs, not backward",
          "[phaseclassifier]")
{
    // PyTorch 2.x frames: torch.autograd.grad and functional.jvp enter the engine through
    // _engine_run_backward, which alone reads as backward (issue 46: a Lightning model whose
    // forward calls jvp read as forward-backward-forward, one step as three iterations).
    Trace t;
    FrameTable& ft = t.snap.frames;
    bool matched = false;
    const uint32_t engine = ft.internFrame("torch/autograd/graph.py", 768, "_engine_run_backward");
    const uint32_t grad = ft.internFrame("torch/autograd/__init__.py", 412, "grad");
    const uint32_t loop = ft.internFrame("train.py", 5, "train");
    const std::vector<uint32_t> jvp = {engine, grad, ft.internFrame("torch/autograd/functional.py", 300, "jvp"),
                                       ft.internFrame("model.py", 40, "forward"),
                                       ft.internFrame("torch/nn/modules/module.py", 1750, "_call_impl"), loop};
    CHECK(stackPhase(t, ft.internStack(jvp), matched) == Phase::Forward);
    const std::vector<uint32_t> penalty = {engine, grad, ft.internFrame("train.py", 30, "loss_with_penalty"), loop};
    CHECK(stackPhase(t, ft.internStack(penalty), matched) == Phase::Loss);
    // autograd.grad from the loop's own code is the step's backward (a functional training loop).
    const std::vector<uint32_t> functional = {engine, grad, loop};
    CHECK(stackPhase(t, ft.internStack(functional), matched) == Phase::Backward);
    // .backward() stays backward wherever it is called, a forward-named wrapper included.
    const std::vector<uint32_t> wrapped = {engine, ft.internFrame("torch/autograd/__init__.py", 266, "backward"),
                                           ft.internFrame("torch/_tensor.py", 581, "backward"),
                                           ft.internFrame("engine.py", 10, "forward"), loop};
    CHECK(stackPhase(t, ft.internStack(wrapped), matched) == Phase::Backward);
}

TEST_CASE("PhaseClassifier: the events after an OOM are not more phases or iterations", "[phaseclassifier]")
{
    SECTION("nothing trains after the OOM: other")
    {
        Trace t;
        for (uint32_t s : {t.forward, t.backward, t.optim, t.forward})
            t.add(s);
        t.dev().trace.append({.action = TraceAction::Oom, .size = 512, .stack = FrameTable::kEmptyStack});
        for (uint32_t s : {t.backward, t.forward, t.setup})
            t.add(s);
        const PhaseAnalysis a = t.classify();
        CHECK(phases(a) == "FBOFFXXX");
        CHECK(a.eventSource[6] == PhaseSource::AfterOom);
        CHECK(a.iterations.size() == 2);
    }
    SECTION("a loop that caught the OOM and stepped again keeps its phases")
    {
        Trace t;
        t.add(t.forward);
        t.dev().trace.append({.action = TraceAction::Oom, .size = 512, .stack = FrameTable::kEmptyStack});
        for (uint32_t s : {t.forward, t.backward, t.optim})
            t.add(s);
        CHECK(phases(t.classify()) == "FFFBO");
    }
}
