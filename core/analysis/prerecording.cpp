// SPDX-License-Identifier: MIT
#include "core/analysis/prerecording.h"
#include "core/analysis/factoredstate.h"
#include "core/model/recordedtensors.h"
#include "core/replay/allocatorconstants.h"

#include "core/util/units.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace headroom {

namespace {

using SizeCounts = std::map<int64_t, int64_t>; ///< block size -> how many

/// The smallest block (PyTorch rounds every request up to 512 B): Adam's step counters share it
/// with small parameters, so its count says nothing about copies.
constexpr int64_t kSmallBytes = allocator::kMinBlock;

bool aliveThrough(const Allocation& a)
{
    return a.start == Allocation::kBeforeWindow && a.end == Allocation::kStillAlive;
}

/// The optimizer the update's frames name (torch/optim/<name>.py), and how many
/// parameter-shaped state tensors it keeps per parameter (every count its options allow).
struct NamedOptimizer {
    std::string name;
    std::set<int> states;
};

std::optional<NamedOptimizer> optimizerOfFrames(const FrameTable& ft, const MemoryTimeline& tl,
                                                const PhaseAnalysis& ph)
{
    static const std::map<std::string, std::set<int>> kStates = {
        {"adamw", {2}},   {"adam", {2}},    {"adamax", {2}},  {"nadam", {2}},   {"radam", {2}},
        {"adadelta", {2}}, {"adagrad", {1}}, {"rmsprop", {1, 2, 3}}, {"sgd", {0, 1}}, {"rprop", {2}},
        {"asgd", {2}}};
    std::set<uint32_t> seenStacks;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (a.start < 0 || ph.eventPhase[size_t(a.start)] != Phase::Optimizer || !seenStacks.insert(a.stack).second)
            continue;
        for (uint32_t f : ft.stack(a.stack)) {
            const std::string_view file = ft.strings().get(ft.frame(f).file);
            const size_t at = file.rfind("torch/optim/");
            if (at == std::string_view::npos || !file.ends_with(".py"))
                continue;
            const std::string stem(file.substr(at + 12, file.size() - at - 15));
            if (const auto it = kStates.find(stem); it != kStates.end())
                return NamedOptimizer{stem, it->second};
        }
    }
    return std::nullopt;
}

/// One gradient per trainable parameter: those born in the trace's backward and alive at its
/// first optimizer event (else at the end of its first backward), as allocation indices.
std::vector<size_t> gradientsAtStep(const MemoryTimeline& tl, const PhaseAnalysis& ph,
                                    const std::vector<AllocationClass>& classes)
{
    int64_t at = -1;
    for (const PhaseSpan& s : ph.spans)
        if (s.phase == Phase::Backward && at < 0)
            at = s.endEvent;
        else if (s.phase == Phase::Optimizer && at >= 0) {
            at = s.startEvent;
            break;
        }
    std::vector<size_t> out;
    if (at < 0)
        return out;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (classes[i].category == TensorCategory::Gradient && classes[i].rule == CategoryRule::BackwardOutlivesPass &&
            a.start >= 0 && a.start <= at && (a.end == Allocation::kStillAlive || a.end > at))
            out.push_back(i);
    }
    return out;
}

SizeCounts gradientSizes(const MemoryTimeline& tl, const std::vector<size_t>& gradients)
{
    SizeCounts out;
    for (size_t i : gradients)
        ++out[tl.allocations[i].size];
    return out;
}

bool backwardRan(const PhaseAnalysis& ph)
{
    return std::any_of(ph.spans.begin(), ph.spans.end(), [](const PhaseSpan& s) { return s.phase == Phase::Backward; });
}

/// The copies of `reference` that `pre` holds: the count most of the bytes agree on.
int copiesOf(const SizeCounts& pre, const SizeCounts& reference)
{
    std::map<int, double> vote;
    double voted = 0;
    for (const auto& [size, n] : reference) {
        const auto it = pre.find(size);
        const int64_t k = it == pre.end() ? 0 : it->second / n;
        vote[int(k)] += double(size) * double(n);
        voted += double(size) * double(n);
    }
    const auto best = std::max_element(vote.begin(), vote.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    return best != vote.end() && best->second >= 0.8 * voted ? best->first : 0;
}

/// Whether the counts hold k copies of the parameter set: every size of at least k blocks a
/// multiple of k. A size of fewer blocks than copies holds no parameter's copies (a buffer of
/// its own: a rotary table's sine and cosine, a causal mask) and says nothing.
bool countsHoldCopies(const SizeCounts& pre, int k)
{
    bool any = false;
    for (const auto& [size, n] : pre) {
        if (n < k)
            continue;
        if (n % k != 0)
            return false;
        any = true;
    }
    return any;
}

std::vector<PreRecordingReading> readingsFor(int copies, std::optional<bool> gradientsKept,
                                             const std::optional<NamedOptimizer>& opt)
{
    std::vector<PreRecordingReading> out;
    for (int g : {0, 1}) {
        if (gradientsKept && *gradientsKept != bool(g))
            continue;
        const int rest = copies - 1 - g;
        if (rest < 0)
            continue;
        if (!opt) {
            out.push_back({rest, g, 0});
        } else if (opt->states.count(rest)) {
            out.push_back({rest, g, 0});
        } else if (const int most = *opt->states.rbegin(); rest > most) {
            // Copies beyond what the named optimizer keeps: further weights (an EMA, a
            // reference model).
            out.push_back({most, g, rest - most});
        }
    }
    return out;
}

/// Without gradients in the trace: every number of copies that divides the count of each size
/// and that the optimizer (named, or any of none, one or two states) and the gradients allow.
std::vector<PreRecordingReading> readingsFromCounts(const SizeCounts& pre, std::optional<bool> gradientsKept,
                                                    const std::optional<NamedOptimizer>& opt)
{
    std::vector<PreRecordingReading> out;
    // Without a backward or an optimizer step in the trace nothing says this is training: a
    // few sizes whose counts share a divisor may be the model's own (two blocks of one size), so
    // it takes four sizes to read copies at all, and the weights alone stay a reading.
    const bool training = gradientsKept.has_value() || opt.has_value();
    if (!training && pre.size() < 4)
        return out;
    for (int k = 2; k <= 4; ++k) {
        if (!countsHoldCopies(pre, k))
            continue;
        for (const PreRecordingReading& x : readingsFor(k, gradientsKept, opt))
            if (x.extraWeights == 0 && x.states <= 2)
                out.push_back(x);
        if (!training)
            out.push_back({0, 0, k - 1});
    }
    return out;
}

/// The parameters in the smallest blocks, counted by a line of the optimizer step that allocates
/// the same number of blocks for every parameter (AdamW's `exp_avg_sq.sqrt()`): where its blocks
/// of every larger size are one multiple c of the parameters of that size, and it makes no
/// other larger block, its smallest blocks over c are the small parameters. Nullopt where no
/// line does.
std::optional<int64_t> smallestFromStepLine(const FrameTable& ft, const MemoryTimeline& tl, const PhaseAnalysis& ph,
                                            const SizeCounts& reference)
{
    // The line is the innermost telling frame (FrameTable::topFrames: the Python one where the
    // stack has C++ frames above it, as stacks='all' records), looked up once per stack.
    std::map<uint32_t, std::optional<uint32_t>> lineOf;
    std::map<uint32_t, SizeCounts> byLine; // line -> its blocks in the optimizer phase
    for (const Allocation& a : tl.allocations) {
        if (a.start < 0 || ph.eventPhase[size_t(a.start)] != Phase::Optimizer)
            continue;
        auto [it, added] = lineOf.try_emplace(a.stack);
        if (added)
            if (const std::vector<uint32_t> top = ft.topFrames(a.stack, 1); !top.empty())
                it->second = top.front();
        if (it->second)
            ++byLine[*it->second][a.size];
    }
    std::optional<int64_t> found;
    for (const auto& line : byLine) {
        const SizeCounts& sizes = line.second; // a named reference: lambdas cannot capture a binding (clang)
        int64_t c = 0;
        bool proportional = !reference.empty();
        for (const auto& [size, n] : sizes) {
            if (size <= kSmallBytes)
                continue;
            const auto it = reference.find(size);
            proportional = proportional && it != reference.end() && n % it->second == 0 && (c == 0 || n / it->second == c);
            c = it == reference.end() ? 0 : n / it->second;
        }
        proportional = proportional && c > 0 && std::all_of(reference.begin(), reference.end(), [&](const auto& kv) {
                           return sizes.count(kv.first) > 0;
                       });
        const auto small = sizes.find(kSmallBytes);
        const int64_t n = small == sizes.end() ? 0 : small->second;
        if (!proportional || n % c != 0 || (found && *found != n / c))
            continue;
        found = n / c;
    }
    return found;
}

/// Without gradients to count them, the parameters in the smallest blocks: from a line of the
/// optimizer step that allocates once per parameter where one does, else at most
/// (blocks - larger parameters) / (copies + 1): that size holds `copies` blocks for each and a
/// step counter for every parameter (small buffers make it fewer).
void addSmallestParameters(const FrameTable& ft, const MemoryTimeline& tl, const PhaseAnalysis& ph,
                           const std::vector<AllocationClass>& classes, int copies, SizeCounts& reference)
{
    if (const std::optional<int64_t> n = smallestFromStepLine(ft, tl, ph, reference)) {
        if (*n > 0)
            reference[kSmallBytes] = *n;
        return;
    }
    int64_t larger = 0, smallest = 0;
    for (const auto& [size, n] : reference)
        larger += n;
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        smallest += aliveThrough(tl.allocations[i]) && tl.allocations[i].size <= kSmallBytes &&
                    classes[i].rule == CategoryRule::AliveThroughWindow;
    if (const int64_t n = (smallest - larger) / (copies + 1); n > 0)
        reference[kSmallBytes] = n;
}

/// Smallest blocks left over, one per parameter: the optimizer's step counters (Adam's kind
/// keeps one per parameter, on the device where the recorder or `fused`/`capturable` put it).
/// Blocks of one size are interchangeable, so where small buffers share the size (BatchNorm's
/// running statistics) as many blocks as parameters are the counters.
void relabelStepCounters(const MemoryTimeline& tl, std::vector<AllocationClass>& classes, const SizeCounts& reference,
                         bool countersPerParameter)
{
    int64_t params = 0, left = 0;
    for (const auto& [size, n] : reference)
        params += n;
    auto leftOver = [&](size_t i) {
        return aliveThrough(tl.allocations[i]) && tl.allocations[i].size <= kSmallBytes &&
               classes[i].rule == CategoryRule::AliveThroughWindow;
    };
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        left += leftOver(i);
    if (params == 0 || left < params || (left > params && !countersPerParameter))
        return;
    for (size_t i = 0; i < tl.allocations.size() && params > 0; ++i)
        if (leftOver(i)) {
            classes[i] = {TensorCategory::OptimizerState, CategoryRule::BeforeWindowState, Phase::Setup};
            --params;
        }
}

void relabel(const MemoryTimeline& tl, std::vector<AllocationClass>& classes, const SizeCounts& reference,
             const PreRecording& r)
{
    // Blocks of one size are interchangeable: the first n of a size are the weights, then
    // the state, the gradients and further weights, by count.
    std::map<int64_t, int64_t> taken;
    const bool decided = r.decided();
    const PreRecordingReading one = decided ? r.readings.front() : PreRecordingReading{};
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (!aliveThrough(a) || classes[i].rule != CategoryRule::AliveThroughWindow)
            continue;
        const auto ref = reference.find(a.size);
        if (ref == reference.end())
            continue;
        const int64_t k = taken[a.size]++ / ref->second; // which copy this block is
        AllocationClass& c = classes[i];
        if (k == 0 || k >= r.copies)
            c.rule = k == 0 ? CategoryRule::BeforeWindowWeights : c.rule;
        else if (!decided)
            c = {TensorCategory::Unknown, CategoryRule::BeforeWindowUndecided, Phase::Setup};
        else if (k <= one.states)
            c = {TensorCategory::OptimizerState, CategoryRule::BeforeWindowState, Phase::Setup};
        else if (k <= one.states + one.gradients)
            c = {TensorCategory::Gradient, CategoryRule::BeforeWindowGradient, Phase::Setup};
        else
            c.rule = CategoryRule::BeforeWindowWeights;
    }
    if (decided && one.states > 0)
        relabelStepCounters(tl, classes, reference, r.stepCounters);
}

/// Memory from before the trace that the optimizer's update frees (not zero_grad, which frees
/// gradients): the step replaced it, as state.
void relabelReplacedState(const FrameTable& ft, const MemoryTimeline& tl, std::vector<AllocationClass>& classes)
{
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        if (classes[i].rule != CategoryRule::FreedByZeroGrad)
            continue;
        bool zeroGrad = false, update = false;
        for (uint32_t f : ft.stack(tl.allocations[i].stack)) {
            const std::string_view name = ft.strings().get(ft.frame(f).name);
            const std::string_view file = ft.strings().get(ft.frame(f).file);
            zeroGrad = zeroGrad || name == "zero_grad";
            update = update || (file.find("torch/optim/") != std::string_view::npos && name != "zero_grad");
        }
        if (update && !zeroGrad)
            classes[i] = {TensorCategory::OptimizerState, CategoryRule::FreedByOptimizerUpdate, Phase::Setup};
    }
}

/// Memory from before the trace that is no copy of the parameter set: blocks of a size no
/// gradient born in the trace has, where the optimizer step allocates blocks of that size as it
/// computes. That is state of its own shape (Adafactor's row and column factors), not weights: a
/// frozen weight or a buffer is not computed with in the step. Blocks of the allocator's
/// smallest size are left alone: every scalar the step makes has it.
void relabelStateBySize(const MemoryTimeline& tl, std::vector<AllocationClass>& classes, const SizeCounts& gradients)
{
    if (gradients.empty())
        return; // no parameter set to tell them from
    std::set<int64_t> stepSizes;
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        if (classes[i].birthPhase == Phase::Optimizer && tl.allocations[i].start >= 0)
            stepSizes.insert(tl.allocations[i].size);
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (!aliveThrough(a) || classes[i].rule != CategoryRule::AliveThroughWindow || a.size <= kSmallBytes)
            continue;
        // Only sizes no gradient has: a block of a trained weight's size may be a frozen weight
        // of the same shape (a position table the size of an MLP matrix), which the step's
        // temporaries of that size say nothing about.
        if (!gradients.count(a.size) && stepSizes.count(a.size))
            classes[i] = {TensorCategory::OptimizerState, CategoryRule::BeforeWindowStateBySize, Phase::Setup};
    }
}

/// The blocks from before the trace that no rule has taken yet, by size (the smallest too),
/// less one per gradient where the weights are still among them.
SizeCounts blocksBeyondWeights(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                               const SizeCounts& gradients, bool weightsTaken)
{
    SizeCounts out;
    for (size_t i = 0; i < tl.allocations.size(); ++i)
        if (aliveThrough(tl.allocations[i]) && classes[i].rule == CategoryRule::AliveThroughWindow)
            ++out[tl.allocations[i].size];
    if (!weightsTaken)
        for (const auto& [size, n] : gradients)
            if (auto it = out.find(size); it != out.end() && (it->second -= std::min(n, it->second)) == 0)
                out.erase(it);
    return out;
}

/// Whether `predicted` is what the blocks beyond the weights hold: it fits among them, and
/// either names a size no gradient has (a factor no weight of the trained set could be) or
/// explains every one of them (a model whose factors all share sizes with its weights: an LSTM's
/// biases and its matrices' rows).
bool factoredFits(const SizeCounts& predicted, const SizeCounts& beyond, const SizeCounts& gradients)
{
    bool ownSize = false;
    for (const auto& [size, n] : predicted) {
        const auto it = beyond.find(size);
        if (it == beyond.end() || it->second < n)
            return false;
        ownSize = ownSize || (size > kSmallBytes && !gradients.count(size));
    }
    const bool all = std::all_of(beyond.begin(), beyond.end(), [&](const auto& kv) {
        const auto it = predicted.find(kv.first);
        return kv.second == (it == predicted.end() ? 0 : it->second);
    });
    return ownSize || all;
}

/// Adafactor's kind of state from before the trace, predicted block by block from the shapes the
/// recorder gave the gradients (factoredstate.h), in their own dtype or in fp32 (transformers'
/// Adafactor keeps fp32 state for bf16 gradients). Read only where exactly one prediction fits;
/// then the predicted count of each size is state, and a frozen weight or a buffer of a factor's
/// size (BatchNorm's running statistics, a bias) stays what it was.
void readFactoredState(const FrameTable& ft, const MemoryTimeline& tl, const std::vector<size_t>& gradientIndices,
                       const SizeCounts& gradients, const RecordedTensors& tensors,
                       std::vector<AllocationClass>& classes, PreRecording& r, bool weightsTaken)
{
    std::vector<ShapedGradient> own, fp32;
    for (size_t i : gradientIndices) {
        const RecordedTensor* rec = recordedTensorAt(tensors, tl.allocations[i].start);
        const int64_t e = rec ? dtypeElementBytes(ft.strings().get(rec->dtype)) : 0;
        if (e == 0)
            return; // a gradient without a recorded shape: nothing to predict from
        own.push_back({rec->shape, e});
        fp32.push_back({rec->shape, 4});
    }
    const SizeCounts left = blocksBeyondWeights(tl, classes, gradients, weightsTaken);
    const SizeCounts a = predictFactoredState(own), b = predictFactoredState(fp32);
    const bool fitsA = !own.empty() && factoredFits(a, left, gradients), fitsB = a != b && factoredFits(b, left, gradients);
    if (fitsA == fitsB)
        return; // neither fits, or both do and nothing says which
    SizeCounts take = fitsA ? a : b;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& x = tl.allocations[i];
        if (!aliveThrough(x) || classes[i].rule != CategoryRule::AliveThroughWindow || take[x.size] == 0)
            continue;
        --take[x.size];
        classes[i] = {TensorCategory::OptimizerState, CategoryRule::BeforeWindowFactoredState, Phase::Setup};
        r.factoredBytes += x.size;
        ++r.factoredBlocks;
    }
    r.factoredElementBytes = int(fitsA ? own.front().elementBytes : 4);
}

std::string describe(const PreRecording& r)
{
    std::string s = formatBytes(r.bytes) + " alive before the trace holds the parameter set (" +
                    formatBytes(r.weightBytes) + ", from " + r.reference + ") " + std::to_string(r.copies) + " times";
    if (!r.optimizer.empty())
        s += "; the optimizer's frames name " + r.optimizer;
    return s;
}

} // namespace

int64_t PreRecording::stateBytesLow() const
{
    int lo = INT32_MAX;
    for (const auto& x : readings)
        lo = std::min(lo, x.states);
    return readings.empty() ? 0 : int64_t(lo) * weightBytes;
}

int64_t PreRecording::stateBytesHigh() const
{
    int hi = 0;
    for (const auto& x : readings)
        hi = std::max(hi, x.states);
    return int64_t(hi) * weightBytes;
}

PreRecording readPreRecording(const FrameTable& frames, const MemoryTimeline& tl, const PhaseAnalysis& ph,
                              std::vector<AllocationClass>& classes, const RecordedTensors& tensors)
{
    PreRecording r;
    relabelReplacedState(frames, tl, classes);
    SizeCounts pre;
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (aliveThrough(a) && classes[i].rule == CategoryRule::AliveThroughWindow) {
            r.bytes += a.size;
            if (a.size > kSmallBytes)
                ++pre[a.size];
        }
    }
    if (pre.empty())
        return r;
    const std::optional<NamedOptimizer> opt = optimizerOfFrames(frames, tl, ph);
    if (opt) {
        r.optimizer = opt->name;
        r.stepCounters = opt->states == std::set<int>{2};
    }
    const std::vector<size_t> gradientIndices = gradientsAtStep(tl, ph, classes);
    const SizeCounts gradients = gradientSizes(tl, gradientIndices);
    SizeCounts reference = gradients;
    if (!reference.empty()) {
        r.reference = "the gradients born in the trace's backward";
        r.copies = copiesOf(pre, reference);
        if (r.found())
            r.readings = readingsFor(r.copies, false, opt);
    } else {
        // A backward that allocates no gradient accumulated into gradients kept from before.
        r.reference = "the counts of the blocks of each size";
        r.readings = readingsFromCounts(pre, backwardRan(ph) ? std::optional(true) : std::nullopt, opt);
        for (const PreRecordingReading& x : r.readings)
            r.copies = std::max(r.copies, x.copies());
        reference.clear();
        for (const auto& [size, n] : pre)
            if (r.found() && n % r.copies == 0) // not a buffer of its own
                reference[size] = n / r.copies;
        if (r.decided() && r.stepCounters)
            addSmallestParameters(frames, tl, ph, classes, r.copies, reference);
    }
    if (!r.found() || r.readings.empty()) {
        r.readings.clear();
        readFactoredState(frames, tl, gradientIndices, gradients, tensors, classes, r, false);
        relabelStateBySize(tl, classes, gradients);
        return r;
    }
    for (const auto& [size, n] : reference)
        r.weightBytes += size * n;
    r.evidence = describe(r);
    if (!r.decided())
        r.settle = "a recording that starts before the optimizer's first step, or one whose optimizer step "
                   "and backward are in the trace (their frames name the optimizer; the gradients they allocate "
                   "are the parameter set)";
    relabel(tl, classes, reference, r);
    readFactoredState(frames, tl, gradientIndices, gradients, tensors, classes, r, true);
    relabelStateBySize(tl, classes, gradients);
    return r;
}

} // namespace headroom
