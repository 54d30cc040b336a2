// SPDX-License-Identifier: MIT
#include "core/analysis/phaseclassifier.h"

#include "core/util/text.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace headroom {

namespace {

bool contains(std::string_view s, std::string_view what)
{
    return s.find(what) != std::string_view::npos;
}

// Bit flags: what one frame says about the phase.
enum : uint8_t { kOptim = 1, kBackward = 2, kLoss = 4, kForward = 8, kSetup = 16 };

uint8_t frameFlags(const FrameTable& ft, uint32_t frameId)
{
    const Frame& f = ft.frame(frameId);
    const std::string_view file = ft.strings().get(f.file);
    const std::string_view name = ft.strings().get(f.name);
    const bool python = endsWith(file, ".py");
    uint8_t flags = 0;
    if (contains(file, "torch/optim/") || contains(file, "torch/nn/utils/clip_grad.py"))
        flags |= kOptim;
    if (contains(name, "Engine::thread_main") || contains(name, "Engine::evaluate_function") ||
        contains(name, "AccumulateGrad::apply") ||
        (contains(name, "autograd::generated::") && contains(name, "Backward")) ||
        (python && name == "backward" && (endsWith(file, "torch/autograd/__init__.py") || endsWith(file, "torch/_tensor.py"))) ||
        (python && (name == "_make_grads" || name == "_engine_run_backward")))
        flags |= kBackward;
    if (python) {
        const std::string n = asciiLower(name);
        if (contains(file, "torch/nn/modules/loss.py") || contains(n, "loss") ||
            (endsWith(file, "torch/nn/functional.py") && (n == "cross_entropy" || n == "binary_cross_entropy")))
            flags |= kLoss;
        if (name == "forward" || ((name == "_call_impl" || name == "_wrapped_call_impl") &&
                                  endsWith(file, "torch/nn/modules/module.py")))
            flags |= kForward;
        if ((name == "__init__" && !isWorkerStartFile(file)) || name == "reset_parameters" || name == "load_state_dict" ||
            name == "pin_memory" || contains(file, "torch/utils/data/") ||
            (endsWith(file, "torch/nn/modules/module.py") && (name == "_apply" || name == "to" || name == "cuda")))
            flags |= kSetup;
    }
    return flags;
}

Phase phaseFromAnnotation(const std::string& name)
{
    const std::string n = asciiLower(name);
    if (contains(n, "optimizer") || contains(n, "zero_grad"))
        return Phase::Optimizer;
    if (contains(n, "backward"))
        return Phase::Backward;
    if (contains(n, "loss"))
        return Phase::Loss;
    if (contains(n, "forward"))
        return Phase::Forward;
    if (contains(n, "## data") || contains(n, "dataloader"))
        return Phase::Setup;
    return Phase::Other;
}

bool isIterationAnnotation(const std::string& name)
{
    return name.rfind("ProfilerStep#", 0) == 0 || name.rfind("headroom.iteration#", 0) == 0;
}

struct Window {
    std::string name;
    int64_t startUs, endUs;
};

std::vector<Window> windowsFor(const Snapshot& snap, int device)
{
    std::vector<Window> out;
    std::vector<std::pair<std::string, int64_t>> open;
    for (const Annotation& a : snap.annotations) {
        if (a.device != device)
            continue;
        if (a.start) {
            open.emplace_back(a.name, a.timeUs);
            continue;
        }
        for (size_t i = open.size(); i-- > 0;) {
            if (open[i].first == a.name) {
                out.push_back({a.name, open[i].second, a.timeUs});
                open.erase(open.begin() + static_cast<ptrdiff_t>(i));
                break;
            }
        }
    }
    // Applied in this order, so a nested window must come after the one around it. Windows are
    // listed as they close (inner first); one opened in the same microsecond as its parent is
    // told apart by its earlier end.
    std::stable_sort(out.begin(), out.end(), [](const Window& x, const Window& y) {
        return x.startUs != y.startUs ? x.startUs < y.startUs : x.endUs > y.endUs;
    });
    return out;
}

/// [first, last] event indices whose time lies inside [startUs, endUs]; empty if none.
std::pair<int64_t, int64_t> eventRange(const TraceEvents& ev, int64_t startUs, int64_t endUs)
{
    auto lo = std::lower_bound(ev.timeUs.begin(), ev.timeUs.end(), startUs);
    auto hi = std::upper_bound(ev.timeUs.begin(), ev.timeUs.end(), endUs);
    return {lo - ev.timeUs.begin(), (hi - ev.timeUs.begin()) - 1};
}

/// An optimizer window whose frames show a forward or a backward ran a closure: its events
/// without frames (the autograd thread under stacks='python') are not the optimizer's
/// either, and take the phase around them like any event without a verdict.
void releaseClosureWindows(const std::vector<std::pair<int64_t, int64_t>>& windows, const TraceEvents& ev,
                           std::vector<uint8_t>& phase, std::vector<PhaseSource>& source)
{
    constexpr uint8_t kUnknown = 0xff;
    for (auto [lo, hi] : windows) {
        bool closure = false;
        for (int64_t i = lo; i <= hi && !closure; ++i)
            closure = source[i] == PhaseSource::Frames && phase[i] != static_cast<uint8_t>(Phase::Optimizer);
        if (!closure)
            continue;
        for (int64_t i = lo; i <= hi; ++i) {
            if (source[i] == PhaseSource::Annotation && ev.stack[i] == FrameTable::kEmptyStack) {
                phase[i] = kUnknown;
                source[i] = PhaseSource::Default;
            }
        }
    }
}

/// Autograd called by a forward or a loss (torch.autograd.grad for a gradient penalty,
/// torch.autograd.functional's jvp, vjp, hessian) is that forward's or loss's work, not the
/// step's backward: the phase of the nearest forward or loss frame outside the call. A
/// `.backward()` never is (a checkpoint's recompute runs forward frames inside one).
std::optional<Phase> autogradCallerPhase(const FrameTable& ft, uint32_t stack)
{
    bool inCall = false;
    for (uint32_t f : ft.stack(stack)) {
        const Frame& fr = ft.frame(f);
        const std::string_view file = ft.strings().get(fr.file);
        const std::string_view name = ft.strings().get(fr.name);
        if (name == "backward" && (endsWith(file, "torch/autograd/__init__.py") || endsWith(file, "torch/_tensor.py")))
            return std::nullopt;
        if (!inCall) {
            inCall = (name == "grad" && endsWith(file, "torch/autograd/__init__.py")) ||
                     endsWith(file, "torch/autograd/functional.py");
            continue;
        }
        const uint8_t flags = frameFlags(ft, f);
        if (flags & kOptim)
            return std::nullopt;
        if (flags & kLoss)
            return Phase::Loss;
        if (flags & kForward)
            return Phase::Forward;
    }
    return std::nullopt;
}

/// The first OOM's events after it are not training (an exception handler, a teardown), unless
/// an optimizer step follows (a loop that caught the OOM and went on): they are Other, and no
/// phase or iteration starts there.
void markAfterOom(const TraceEvents& ev, std::vector<uint8_t>& phase, std::vector<PhaseSource>& source)
{
    const auto oom = std::find(ev.action.begin(), ev.action.end(), TraceAction::Oom);
    if (oom == ev.action.end())
        return;
    const size_t at = size_t(oom - ev.action.begin());
    const size_t from = at + 1;
    // The failing request was made in the phase before it (not the one after, as a gap between
    // forward and backward would read).
    if (at > 0 && (source[at] == PhaseSource::Neighbours || source[at] == PhaseSource::Default))
        phase[at] = phase[at - 1];
    for (size_t i = from; i < phase.size(); ++i)
        if (phase[i] == static_cast<uint8_t>(Phase::Optimizer) && source[i] != PhaseSource::Neighbours)
            return;
    for (size_t i = from; i < phase.size(); ++i) {
        phase[i] = static_cast<uint8_t>(Phase::Other);
        source[i] = PhaseSource::AfterOom;
    }
}

} // namespace

bool isWorkerStartFile(std::string_view file)
{
    return contains(file, "/multiprocessing/") || contains(file, "/concurrent/futures/") ||
           endsWith(file, "/threading.py");
}

Phase PhaseClassifier::phaseOfStack(const FrameTable& ft, uint32_t stack, bool* matched)
{
    // What the allocation is, not who called it: the innermost frame that names a phase
    // decides (Lightning runs forward and backward inside optimizer.step(closure), so an outer
    // torch/optim frame says nothing), except that anything under autograd's engine is
    // backward (a checkpoint's recomputed forward runs there) unless the optimizer's own
    // update is innermost (an optimizer stepped from a gradient hook). Setup frames
    // (__init__, the data loader) decide only when nothing else matched: a forward builds
    // small objects too.
    uint8_t all = 0;
    uint8_t innermost = 0;
    for (uint32_t f : ft.stack(stack)) {
        const uint8_t flags = frameFlags(ft, f);
        all |= flags;
        if (innermost == 0 && (flags & ~kSetup))
            innermost = flags;
    }
    *matched = all != 0;
    if (innermost & kOptim) return Phase::Optimizer;
    if (const std::optional<Phase> p = autogradCallerPhase(ft, stack))
        return *p;
    if (all & kBackward) return Phase::Backward;
    if (innermost & kLoss) return Phase::Loss;
    if (innermost & kForward) return Phase::Forward;
    if (all & kSetup) return Phase::Setup;
    return Phase::Other;
}

int PhaseAnalysis::iterationOf(int64_t event) const
{
    if (iterations.empty())
        return -1;
    auto it = std::upper_bound(iterations.begin(), iterations.end(), event,
                               [](int64_t e, const Iteration& i) { return e < i.startEvent; });
    return it == iterations.begin() ? 0 : static_cast<int>((it - iterations.begin()) - 1);
}

const PhaseSpan* PhaseAnalysis::spanOf(int64_t event) const
{
    auto it = std::upper_bound(spans.begin(), spans.end(), event,
                               [](int64_t e, const PhaseSpan& s) { return e < s.startEvent; });
    if (it == spans.begin())
        return nullptr;
    return &*(it - 1);
}

PhaseAnalysis PhaseClassifier::classify(const Snapshot& snap, const DeviceData& dev)
{
    PhaseAnalysis out;
    const TraceEvents& ev = dev.trace;
    const size_t n = ev.count();
    if (n == 0)
        return out;
    constexpr uint8_t kUnknown = 0xff;
    std::vector<uint8_t> phase(n, kUnknown);
    out.eventSource.assign(n, PhaseSource::Default);

    // 1. Annotation windows (inner windows start later and overwrite outer ones).
    std::vector<std::pair<int64_t, int64_t>> iterationWindows, optimizerWindows;
    const bool timed = ev.anyTime && std::is_sorted(ev.timeUs.begin(), ev.timeUs.end());
    if (timed) {
        for (const Window& w : windowsFor(snap, dev.device)) {
            auto [lo, hi] = eventRange(ev, w.startUs, w.endUs);
            if (lo > hi)
                continue;
            if (isIterationAnnotation(w.name)) {
                iterationWindows.emplace_back(lo, hi);
                continue;
            }
            const Phase p = phaseFromAnnotation(w.name);
            if (p == Phase::Other)
                continue;
            if (p == Phase::Optimizer)
                optimizerWindows.emplace_back(lo, hi);
            for (int64_t i = lo; i <= hi; ++i) {
                phase[i] = static_cast<uint8_t>(p);
                out.eventSource[i] = PhaseSource::Annotation;
            }
        }
    }

    // 2. Frames, cached per stack.
    std::vector<int8_t> stackPhase(snap.frames.stackCount(), -2); // -2: not computed, -1: no rule
    // PyTorch itself opens an "Optimizer.step#..." window around step(), and a closure runs
    // the forward and backward inside it: there the frames say what the allocation is.
    constexpr uint8_t kOptimizerWindow = static_cast<uint8_t>(Phase::Optimizer);
    for (size_t i = 0; i < n; ++i) {
        if (phase[i] != kUnknown && phase[i] != kOptimizerWindow)
            continue;
        const uint32_t s = ev.stack[i];
        if (s == FrameTable::kEmptyStack || s >= stackPhase.size())
            continue;
        if (stackPhase[s] == -2) {
            bool matched = false;
            const Phase p = phaseOfStack(snap.frames, s, &matched);
            stackPhase[s] = matched ? static_cast<int8_t>(p) : int8_t(-1);
        }
        if (stackPhase[s] < 0)
            continue;
        const Phase p = static_cast<Phase>(stackPhase[s]);
        if (phase[i] == kOptimizerWindow && p != Phase::Forward && p != Phase::Loss && p != Phase::Backward)
            continue;
        phase[i] = static_cast<uint8_t>(p);
        out.eventSource[i] = PhaseSource::Frames;
    }
    releaseClosureWindows(optimizerWindows, ev, phase, out.eventSource);
    // Events with Python frames that match no training rule are the training loop's
    // own code: between forward and backward that is the loss computation (e.g.
    // `logits.float()` on the loss line), anywhere else data movement and setup.
    constexpr uint8_t kLoopCode = 0xfe;
    for (size_t i = 0; i < n; ++i)
        if (phase[i] == kUnknown && ev.stack[i] != FrameTable::kEmptyStack)
            phase[i] = kLoopCode;
    {
        int lastKnown = -1;
        std::vector<size_t> pending;
        auto settle = [&](int next) {
            // Sandwiched: part of the phase around it; but between two optimizer events the loop's
            // own code is the trainer's between steps (the next batch), not the update's.
            if (next >= 0 && next == lastKnown && next != int(Phase::Optimizer)) {
                for (size_t k : pending) {
                    phase[k] = static_cast<uint8_t>(next);
                    out.eventSource[k] = PhaseSource::Neighbours;
                }
                pending.clear();
                return;
            }
            const bool betweenForwardAndBackward =
                (lastKnown == int(Phase::Forward) || lastKnown == int(Phase::Loss)) &&
                (next == int(Phase::Loss) || next == int(Phase::Backward) || next < 0);
            for (size_t k : pending) {
                phase[k] = static_cast<uint8_t>(betweenForwardAndBackward ? Phase::Loss : Phase::Setup);
                out.eventSource[k] = PhaseSource::Frames;
            }
            pending.clear();
        };
        for (size_t i = 0; i < n; ++i) {
            if (phase[i] == kLoopCode) {
                pending.push_back(i);
            } else if (phase[i] != kUnknown) {
                settle(phase[i]);
                lastKnown = phase[i];
            }
        }
        settle(-1);
    }

    // 3. Events without a verdict take the phase around them. A gap that follows forward or
    //    loss and precedes the optimizer or the next data step is backward on the autograd
    //    thread (stacks='python' leaves it without frames).
    size_t i = 0;
    while (i < n) {
        if (phase[i] != kUnknown) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < n && phase[j] == kUnknown)
            ++j;
        const int before = i > 0 ? phase[i - 1] : -1;
        const int after = j < n ? phase[j] : -1;
        Phase fill;
        if (before < 0)
            fill = after >= 0 ? static_cast<Phase>(after) : Phase::Other;
        else if (after == before || after < 0)
            fill = static_cast<Phase>(before);
        else if ((before == int(Phase::Forward) || before == int(Phase::Loss)) &&
                 (after == int(Phase::Optimizer) || after == int(Phase::Setup) || after == int(Phase::Backward)))
            fill = Phase::Backward;
        else
            fill = static_cast<Phase>(before);
        for (size_t k = i; k < j; ++k) {
            phase[k] = static_cast<uint8_t>(fill);
            out.eventSource[k] = before < 0 && after < 0 ? PhaseSource::Default : PhaseSource::Neighbours;
        }
        i = j;
    }

    markAfterOom(ev, phase, out.eventSource);
    out.eventPhase.resize(n);
    for (size_t k = 0; k < n; ++k)
        out.eventPhase[k] = static_cast<Phase>(phase[k]);

    // Spans.
    for (size_t k = 0; k < n; ++k) {
        if (out.spans.empty() || out.spans.back().phase != out.eventPhase[k])
            out.spans.push_back({out.eventPhase[k], static_cast<int64_t>(k), static_cast<int64_t>(k)});
        else
            out.spans.back().endEvent = static_cast<int64_t>(k);
        if (out.firstForwardEvent < 0 && out.eventPhase[k] == Phase::Forward)
            out.firstForwardEvent = static_cast<int64_t>(k);
    }

    // Iterations: explicit step annotations, else a new one where forward (or data) follows
    // a finished backward/optimizer.
    std::vector<int64_t> starts;
    if (iterationWindows.size() >= 2) {
        out.iterationSource = "annotations";
        for (auto [lo, hi] : iterationWindows)
            starts.push_back(lo);
        starts.front() = 0;
    } else {
        bool sawOptimizer = false;
        for (const PhaseSpan& s : out.spans)
            sawOptimizer |= s.phase == Phase::Optimizer;
        out.iterationSource = sawOptimizer ? "optimizer steps" : "forward starts";
        starts.push_back(0);
        bool finished = false;
        for (size_t k = 0; k < out.spans.size(); ++k) {
            const PhaseSpan& s = out.spans[k];
            if (s.phase == Phase::Optimizer || (!sawOptimizer && s.phase == Phase::Backward)) {
                finished = true;
            } else if (finished && s.phase == Phase::Forward) {
                // The iteration starts with the data step just before its forward, if any.
                const bool dataFirst = k > 0 && out.spans[k - 1].phase == Phase::Setup;
                starts.push_back(dataFirst ? out.spans[k - 1].startEvent : s.startEvent);
                finished = false;
            }
        }
        if (starts.size() == 1)
            out.iterationSource = "single window";
    }
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    for (size_t k = 0; k < starts.size(); ++k) {
        const int64_t end = k + 1 < starts.size() ? starts[k + 1] - 1 : static_cast<int64_t>(n) - 1;
        out.iterations.push_back({static_cast<int>(k), starts[k], end});
    }
    return out;
}

} // namespace headroom
