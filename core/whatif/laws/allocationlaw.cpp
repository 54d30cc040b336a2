// SPDX-License-Identifier: MIT
#include "core/whatif/laws/allocationlaw.h"
#include "core/replay/allocatorconstants.h"
#include "core/whatif/laws/incominggradients.h"
#include "core/whatif/laws/lawlinks.h"

#include "core/model/recordedtensors.h"
#include "core/whatif/laws/shapelaw.h"

#include "core/whatif/laws/stackreadings.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace headroom {

namespace {

using allocator::kMinBlock; // the caching allocator's smallest block and its rounding
constexpr int64_t kTiny = 1 << 20;   // below this, a size that is no multiple of b*s is constant
constexpr size_t kMaxAmbiguities = 64; // groups named; the rest still widen the band



bool keptState(TensorCategory c) { return c == TensorCategory::Parameter || c == TensorCategory::Gradient ||
                                          c == TensorCategory::OptimizerState; }

/// The optimizer step works on parameters: its temporaries (a foreach AdamW's) are shaped like
/// them, whatever their size divides by. A closure's forward and backward inside the step are
/// phases of their own (docs/categories-and-phases.md).
bool optimizerMade(const AllocationClass& c) { return c.birthPhase == Phase::Optimizer; }

/// Unclassified memory made before the loop and never freed: a buffer, a cache, state of an
/// optimizer outside torch.optim. It does not grow with the batch.
bool setupState(const Allocation& a, const AllocationClass& c)
{
    if (isEngineMemory(c.category)) // an engine's cache or model: sized by its own settings, not the batch
        return true;
    return c.category == TensorCategory::Unknown && a.end == Allocation::kStillAlive &&
           (a.start == Allocation::kBeforeWindow || c.birthPhase == Phase::Setup);
}

/// The casts autocast saves of fp32 weights: half a weight's size, at most one per weight.
class WeightCasts {
public:
    WeightCasts(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes)
    {
        for (size_t i = 0; i < tl.allocations.size() && i < classes.size(); ++i)
            if (classes[i].category == TensorCategory::Parameter)
                ++m_weights[tl.allocations[i].size];
    }
    /// How many weights a tensor of `size` may be the cast of.
    int castsOf(int64_t size) const
    {
        const auto it = m_weights.find(size * 2);
        return it == m_weights.end() ? 0 : it->second;
    }

private:
    std::map<int64_t, int> m_weights;
};

/// The law with these exponents, if there is one.
std::optional<SizeLaw> lawWith(int batch, int seq)
{
    for (size_t l = 0; l < kSizeLawCount; ++l) {
        const LawExponents e = lawExponents(SizeLaw(l));
        if (SizeLaw(l) != SizeLaw::StepBlock && e.batch == batch && e.seq == seq)
            return SizeLaw(l);
    }
    return std::nullopt;
}

} // namespace

namespace {

/// The units a size is factored by at the measured b0 and s0.
struct Units {
    int s0 = 1;
    int64_t tokens = 1, quad = 1, mask = 1;
    bool sMask(int64_t z) const { return s0 > 1 && fitsUnit(z, mask) && z <= 8 * mask + kMinBlock; }
};

/// Stage 1: kept state is constant; a kept s x s buffer (a causal mask) is constant when built
/// for a longest sequence and s^2 when built for the run's: both kept.
void readCategory(AllocationLaw& law, const Allocation& a, const AllocationClass& c, const FrameTable& frames,
                  const Units& u)
{
    law.evidence = LawEvidence::Category;
    const bool buffer = (c.category == TensorCategory::Parameter || setupState(a, c)) && !optimizerMade(c) &&
                        !torchLayerMade(frames, a.stack);
    if (buffer && a.size > kMinBlock && u.sMask(a.size))
        law.allowed |= lawBit(SizeLaw::SeqSquared);
}

/// Stages 2 and 3: the size's factors, and b*s^2 where a frame names attention. Returns whether
/// the allocation was made by a softmax (stage 4 reads those).
bool readSize(AllocationLaw& law, const Allocation& a, StackReadings& stacks, const Units& u, int64_t& quadPossible)
{
    const int64_t z = a.size;
    law.evidence = LawEvidence::Size;
    const bool token = fitsUnit(z, u.tokens) && z >= 4 * u.tokens;
    if (token) {
        law.central = SizeLaw::Tokens;
        law.allowed = lawBit(SizeLaw::Tokens);
    } else if (z >= kTiny) {
        // Large but no multiple of b*s: batch-shaped by its size, constant by its factors.
        law.central = SizeLaw::Tokens;
        law.allowed = lawBit(SizeLaw::Tokens) | lawBit(SizeLaw::Constant);
    }
    bool softmax = false;
    if (u.s0 > 1 && stacks.attention(a.stack)) {
        softmax = stacks.softmax(a.stack);
        if (fitsUnit(z, u.quad)) {
            law.allowed |= lawBit(SizeLaw::TokensBySeq);
            quadPossible += z;
        } else if (!token && u.sMask(z)) {
            law.central = SizeLaw::SeqSquared; // an s x s mask: no batch dimension
            law.allowed = lawBit(SizeLaw::SeqSquared) | lawBit(SizeLaw::Constant);
        }
    }
    // s x s elements of at most 8 bytes: a causal mask made in the forward (no batch
    // dimension) reads as b*s where b*X = s, e.g. 2 x 128 tokens x 64 bytes = 128^2.
    if (token && u.sMask(z))
        law.allowed |= lawBit(SizeLaw::SeqSquared);
    return softmax;
}

/// `current` where `allowed` holds it, else the law of the highest growth `allowed` holds.
SizeLaw highestGrowth(uint8_t allowed, SizeLaw current)
{
    if (allowed & lawBit(current))
        return current;
    double most = -1;
    for (size_t l = 0; l < kSizeLawCount; ++l)
        if ((allowed & (1u << l)) && lawFactor(SizeLaw(l), 2, 2) > most) {
            most = lawFactor(SizeLaw(l), 2, 2);
            current = SizeLaw(l);
        }
    return current;
}

} // namespace

AllocationLaws AllocationLaws::fromSnapshot(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                            const FrameTable& frames, int b0, int s0, bool autocast,
                                            const std::vector<Iteration>& iterations,
                                            const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors)
{
    AllocationLaws out;
    out.m_laws.resize(tl.allocations.size());
    StackReadings stacks(frames);
    Units u;
    u.s0 = s0;
    u.tokens = int64_t(b0) * s0;
    u.quad = u.tokens * s0;
    u.mask = int64_t(s0) * s0;
    const int64_t tokens = u.tokens, quadUnit = u.quad;
    std::vector<uint8_t> softmaxMade(tl.allocations.size(), 0);
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const AllocationClass c = i < classes.size() ? classes[i] : AllocationClass{};
        AllocationLaw& law = out.m_laws[i];
        if (keptState(c.category) || setupState(a, c) || optimizerMade(c) || frameworkMade(c.rule))
            readCategory(law, a, c, frames, u);
        else if (a.size > kMinBlock)
            softmaxMade[i] = readSize(law, a, stacks, u, out.m_quadPossible);
        out.m_bytes[size_t(law.central)] += a.size;
    }
    out.readSoftmax(tl, classes, frames, softmaxMade, tokens, quadUnit, tensors.empty());
    if (tensors.empty())
        out.readSizeOffset(tl, classes, b0, s0);
    out.readSteps(tl, s0, std::max<size_t>(1, iterations.size()), tokens);
    if (autocast)
        out.readCasts(tl, classes, iterations);
    out.readMirror(tl, classes);
    out.readShapes(tl, tensors, b0, s0);
    out.readLikes(tl, tensors, b0, s0);
    out.readIncomingGradients(tl, classes, tensors);
    out.readWidths(tl, classes, tensors, frames.strings(), tokens);
    out.readRoles(tl, classes);
    out.collectAmbiguities(tl, frames, tensors);
    out.m_iterations = std::max<size_t>(1, iterations.size());
    out.hashLines(tl, frames);
    return out;
}

void AllocationLaws::readCasts(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                               const std::vector<Iteration>& iterations)
{
    // Sizes alone cannot tell a cast from an activation of its size (b*s equal to the hidden
    // size makes every b*s*h bf16 activation half an h*h weight): the count can. A cast the
    // forward frees (no_grad, or the autocast cache cleared at its exit) is a temporary.
    const WeightCasts casts(tl, classes);
    std::map<std::pair<size_t, int64_t>, int> seen; // (iteration, size) -> casts counted
    for (size_t i = 0; i < m_laws.size() && i < classes.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const TensorCategory cat = classes[i].category;
        if ((cat != TensorCategory::Activation && cat != TensorCategory::Temporary) ||
            classes[i].birthPhase != Phase::Forward || m_laws[i].central != SizeLaw::Tokens)
            continue;
        const int weights = casts.castsOf(a.size);
        if (weights == 0)
            continue;
        const auto it = std::upper_bound(iterations.begin(), iterations.end(), a.start,
                                         [](int64_t e, const Iteration& x) { return e < x.startEvent; });
        const size_t iteration = size_t(it - iterations.begin());
        m_laws[i].allowed |= lawBit(SizeLaw::Constant);
        if (seen[{iteration, a.size}]++ < weights)
            setCentral(i, SizeLaw::Constant, LawEvidence::Cast, a.size);
    }
}

AllocationLaws AllocationLaws::withWidths(const std::vector<WidthClass>& widths,
                                          const std::vector<std::pair<uint32_t, WidthClass>>& copies) const
{
    AllocationLaws out = *this;
    for (size_t i = 0; i < widths.size() && i < out.m_laws.size(); ++i)
        out.m_laws[i].width = widths[i];
    for (const auto& [source, width] : copies) {
        AllocationLaw law = m_laws[source];
        law.width = width;
        out.m_laws.push_back(law);
        out.m_lines.push_back(m_lines[source]);
    }
    return out;
}

void AllocationLaws::settle(size_t i, bool batch, int exponent)
{
    AllocationLaw& law = m_laws[i];
    uint8_t kept = 0;
    for (size_t l = 0; l < kSizeLawCount; ++l) {
        const LawExponents e = lawExponents(SizeLaw(l));
        if ((law.allowed & (1u << l)) && (batch ? e.batch : e.seq) == exponent)
            kept |= uint8_t(1u << l);
    }
    const LawExponents c = lawExponents(law.central);
    const bool centralKept = kept & (1u << unsigned(law.central));
    if (!centralKept) {
        const auto l = batch ? lawWith(exponent, c.seq) : lawWith(c.batch, exponent);
        if (!l)
            return; // no law has these exponents: leave the reading to the snapshot
        kept = uint8_t(kept ? kept : lawBit(*l));
        const SizeLaw next = (kept & lawBit(*l)) ? *l : SizeLaw(__builtin_ctz(kept));
        law.central = next;
    }
    law.allowed = kept;
    law.evidence = LawEvidence::Runs;
    if (!law.ambiguous())
        law.group = 0;
}

void AllocationLaws::readShapes(const MemoryTimeline& tl, const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                int b0, int s0)
{
    if (tensors.empty())
        return;
    using K = RecordedTensor::Kind;
    // Scores over s0 + c tokens in the shapes say how many tokens there are.
    if (const int c = shapeTokenOffset(tensors, s0))
        m_tokenOffset = c;
    // A model width equal to b0 or s0 makes every mark of it a possible width too.
    const MarkCoincidence coincident = headroom::markCoincidence(tensors, b0, s0);
    m_markCoincidence = coincident;
    for (size_t i = 0; i < m_laws.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const RecordedTensor* rec = recordedTensorAt(tensors, a.start);
        if (!rec)
            continue;
        const RecordedTensor& t = *rec;
        if (t.kind == K::Parameter || t.kind == K::Buffer || t.kind == K::Gradient || t.kind == K::OptimizerState)
            continue; // constant by its category already
        // A shape over s0 + c tokens: the sizes were factored by s0, so the shape alone reads it.
        // Else it narrows what the size and the stack allow; a shape at odds with them (a mark
        // by coincidence) tells nothing.
        if (m_tokenOffset && offsetDims(t, s0, m_tokenOffset)) {
            AllocationLaw& law = m_laws[i];
            const uint8_t allowed = offsetShapeLaws(t, b0, s0, m_tokenOffset);
            if (!allowed)
                continue;
            law.offset = true;
            setCentral(i, highestGrowth(allowed, law.central), LawEvidence::Shape, a.size);
            law.allowed = allowed;
            ++m_shapeRead;
        } else {
            readShape(i, a.size, t, uint32_t(a.start), tensors, b0, s0, coincident);
        }
    }
}

void AllocationLaws::readShape(size_t i, int64_t size, const RecordedTensor& t, uint32_t event,
                               const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, int b0, int s0,
                               MarkCoincidence coincident)
{
    AllocationLaw& law = m_laws[i];
    const uint8_t asMarked = uint8_t(shapeLaws(t, b0, s0) & law.allowed);
    const uint8_t allowed = uint8_t(shapeLaws(t, b0, s0, coincident) & law.allowed);
    if (!allowed)
        return;
    law.offset = false;
    if (allowed == asMarked) {
        // The marks decide (no mark is of a model width's size): the shape is read.
        setCentral(i, highestGrowth(allowed, law.central), LawEvidence::Shape, size);
        law.allowed = allowed;
        ++m_shapeRead;
        return;
    }
    // A mark may be a model width of the same size (d_model = s0): the shape keeps every
    // reading, unless the op's weight says which dimension is the width (a structural fact,
    // so the shape is read); else the other evidence's reading stands where the shape allows it.
    if (const int w = weightWidthDim(t, event, tensors, b0, s0, coincident); w >= 0) {
        if (const uint8_t byWeight = uint8_t(shapeLawsWithWidth(t, b0, s0, w) & allowed)) {
            setCentral(i, highestGrowth(byWeight, law.central), LawEvidence::Shape, size);
            law.allowed = byWeight;
            ++m_shapeRead;
            return;
        }
    }
    law.allowed = allowed;
    if (!(allowed & lawBit(law.central)))
        setCentral(i, highestGrowth(asMarked ? asMarked : allowed, law.central), LawEvidence::Shape, size);
}

void AllocationLaws::readWidths(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                const StringPool& strings, int64_t tokens)
{
    for (size_t i = 0; i < m_laws.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const RecordedTensor* rec = tensors.empty() ? nullptr : recordedTensorAt(tensors, a.start);
        const AllocationClass c = i < classes.size() ? classes[i] : AllocationClass{};
        const WidthClass w = widthOf(a, c, rec, strings, tokens);
        m_laws[i].width = w;
        const bool recorded = rec && rec->dtype != 0;
        if (w == WidthClass::Fixed)
            ++m_widths.fixedRead;
        else if (w == WidthClass::Float)
            ++(recorded ? m_widths.floatRead : m_widths.floatAssumed);
        else {
            ++m_widths.either;
            m_widths.eitherBytes += a.size;
        }
    }
}

void AllocationLaws::readRoles(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes)
{
    for (size_t i = 0; i < m_laws.size(); ++i) {
        const AllocationClass c = i < classes.size() ? classes[i] : AllocationClass{};
        // The optimizer's own allocations: its state by category, and what its step makes
        // beside parameters and gradients (a foreach AdamW's parameter-shaped temporaries).
        const StateRole role = gathersLayer(c.rule) ? StateRole::Gather
                               : c.category == TensorCategory::OptimizerState ? StateRole::OptimizerState
                               : optimizerMade(c) && !keptState(c.category) ? StateRole::OptimizerTemp
                               : c.category == TensorCategory::Parameter    ? StateRole::Parameter
                               : c.category == TensorCategory::Gradient     ? StateRole::Gradient
                                                                            : StateRole::Other;
        m_laws[i].role = role;
        m_roleBytes[size_t(role)] += tl.allocations[i].size;
        ++m_roleCount[size_t(role)];
    }
}

void AllocationLaws::setCentral(size_t i, SizeLaw l, LawEvidence e, int64_t size)
{
    AllocationLaw& law = m_laws[i];
    m_bytes[size_t(law.central)] -= size;
    law.central = l;
    law.allowed |= lawBit(l);
    law.evidence = e;
    m_bytes[size_t(l)] += size;
}

void AllocationLaws::readSteps(const MemoryTimeline& tl, int s0, size_t iterations, int64_t tokens)
{
    // A line that allocates about a multiple of s0 times per iteration, tensors with no token
    // dimension of their own: one per step of a loop over the sequence (an LSTM's cells).
    // Their number follows s, each one's size b (below the allocator's smallest block,
    // nothing until the true size passes it: both readings kept).
    if (s0 < 16) // a short sequence: a layer loop could be taken for a loop over steps
        return;
    std::map<std::pair<uint32_t, int64_t>, int64_t> perLine; // (stack, size) -> allocations
    for (size_t i = 0; i < m_laws.size(); ++i)
        if (m_laws[i].evidence == LawEvidence::Size && m_laws[i].central == SizeLaw::Constant && tl.allocations[i].stack)
            ++perLine[{tl.allocations[i].stack, tl.allocations[i].size}];
    for (size_t i = 0; i < m_laws.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        if (m_laws[i].evidence != LawEvidence::Size || m_laws[i].central != SizeLaw::Constant || !a.stack)
            continue;
        // Per iteration, within a tenth of a multiple of s0 (a loop also allocates its first
        // and last state: the LSTM's 516 per iteration at s0 = 64).
        const double n = double(perLine[{a.stack, a.size}]) / double(iterations);
        const double steps = std::round(n / s0);
        if (steps < 1 || std::abs(n - steps * s0) > 0.1 * n)
            continue;
        if (a.size <= kMinBlock) {
            m_laws[i].allowed |= lawBit(SizeLaw::Sequence) | lawBit(SizeLaw::Tokens);
            setCentral(i, SizeLaw::StepBlock, LawEvidence::Steps, a.size);
        } else if (a.size % std::max<int64_t>(1, tokens / s0) == 0) {
            setCentral(i, SizeLaw::Tokens, LawEvidence::Steps, a.size);
        }
    }
}

void AllocationLaws::readMirror(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes)
{
    // The backward makes a gradient of the size of the forward tensor it belongs to; its stack
    // (the autograd engine, or the line that called backward) says nothing else. It takes the
    // readings of the forward's tensors of its size: the most common one, and all of them.
    struct Readings {
        std::array<int64_t, kSizeLawCount> count{};
        uint8_t allowed = 0;
    };
    std::map<int64_t, Readings> forward;
    auto born = [&](size_t i) { return i < classes.size() ? classes[i].birthPhase : Phase::Other; };
    for (size_t i = 0; i < m_laws.size(); ++i)
        if (born(i) == Phase::Forward && m_laws[i].evidence != LawEvidence::Category) {
            Readings& r = forward[tl.allocations[i].size];
            ++r.count[size_t(m_laws[i].central)];
            r.allowed |= m_laws[i].allowed;
        }
    for (size_t i = 0; i < m_laws.size(); ++i) {
        if (born(i) != Phase::Backward || m_laws[i].evidence != LawEvidence::Size)
            continue;
        const auto it = forward.find(tl.allocations[i].size);
        if (it == forward.end())
            continue;
        const auto& c = it->second.count;
        const SizeLaw most = SizeLaw(std::max_element(c.begin(), c.end()) - c.begin());
        m_laws[i].allowed |= it->second.allowed;
        setCentral(i, most, LawEvidence::Mirror, tl.allocations[i].size);
    }
}

void AllocationLaws::readIncomingGradients(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                           const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors)
{
    for (const IncomingGradient& g : incomingGradients(tl, classes, tensors, m_laws)) {
        m_laws[g.index].allowed |= lawBit(SizeLaw::Constant);
        if (g.central)
            setCentral(g.index, SizeLaw::Constant, LawEvidence::Gradient, tl.allocations[g.index].size);
    }
}

void AllocationLaws::hashLines(const MemoryTimeline& tl, const FrameTable& frames)
{
    m_lines.resize(tl.allocations.size());
    m_lineHashes.assign(1, 0); // index 0: no stack
    std::map<uint32_t, uint32_t> indexOf{{0, 0}};
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const uint32_t sid = tl.allocations[i].stack;
        auto it = indexOf.find(sid);
        if (it == indexOf.end()) {
            it = indexOf.emplace(sid, uint32_t(m_lineHashes.size())).first;
            m_lineHashes.push_back(lineHash(frames, sid));
        }
        m_lines[i] = it->second;
    }
}

void AllocationLaws::readLikes(const MemoryTimeline& tl, const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                               int b0, int s0)
{
    for (const auto& members : likeClasses(tl.allocations, tensors)) {
        const std::optional<ClassReading> r = classReading(members, m_laws, tl.allocations, b0, s0);
        if (!r)
            continue;
        // A member keeps the readings of its own that every member allows, and gains only the
        // class's central one (which its size allows, where its frames did not).
        for (size_t i : members) {
            const uint8_t mine = uint8_t((m_laws[i].allowed & r->allowed) | lawBit(r->central));
            if (m_laws[i].central != r->central)
                setCentral(i, r->central, LawEvidence::Op, tl.allocations[i].size);
            m_laws[i].allowed = mine;
        }
    }
}

void AllocationLaws::collectAmbiguities(const MemoryTimeline& tl, const FrameTable& frames,
                                        const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors)
{
    std::map<std::tuple<int64_t, uint32_t, uint8_t, uint8_t, uint8_t, bool>, size_t> index;
    for (size_t i = 0; i < m_laws.size(); ++i) {
        AllocationLaw& law = m_laws[i];
        if (!law.ambiguous())
            continue;
        const auto key = std::make_tuple(tl.allocations[i].size, tl.allocations[i].stack, uint8_t(law.central), law.allowed,
                                         uint8_t(law.evidence), law.offset);
        auto it = index.find(key);
        if (it == index.end()) {
            if (m_ambiguities.size() >= kMaxAmbiguities)
                continue;
            it = index.emplace(key, m_ambiguities.size()).first;
            m_ambiguities.push_back({law.central, law.allowed, law.evidence, law.offset, tl.allocations[i].size, 0,
                                     tl.allocations[i].stack, {},
                                     recordedTensorAt(tensors, tl.allocations[i].start) != nullptr});
        }
        ++m_ambiguities[it->second].count;
        law.group = uint16_t(it->second + 1);
    }
    for (auto& amb : m_ambiguities) {
        const auto lines = frames.topFrameLines(amb.stack, 1);
        amb.where = lines.empty() ? std::string() : lines.front();
    }
}

} // namespace headroom
