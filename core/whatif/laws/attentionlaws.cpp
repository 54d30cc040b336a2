// SPDX-License-Identifier: MIT
// The laws' attention stages (docs/whatif-model.md, "Laws", stages 4 and 4b): a softmax's
// output and the tensors of its size made in its call, and scores over more tokens than the
// stated sequence read from their sizes. AllocationLaws' other stages: allocationlaw.cpp.
#include "core/whatif/laws/allocationlaw.h"

#include "core/replay/allocatorconstants.h"
#include "core/whatif/laws/stackreadings.h"
#include "core/whatif/laws/tokenoffset.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace headroom {

namespace {

using allocator::kMinBlock;

/// The line `key`'s call was at in this stack; -1 when the stack is not in that call.
int64_t lineIn(const FrameTable& frames, uint32_t stack, const std::string& key)
{
    for (const auto& [k, line] : callKeyLines(frames, stack))
        if (k == key)
            return line;
    return -1;
}

/// At a size the scores share with tensors of b*s (h*s = d, head width = s), in a call that is
/// handed q, k and v (no module call inside it: a llama's scaled_dot_product_attention): the
/// scores and masked scores are what the call makes above the line that calls the softmax,
/// each the last allocation of its line (before it at that line are the op's own copies of its
/// inputs, einsum's contiguous q and k); what it makes at or below that line (the
/// probabilities times v) is not.
std::vector<size_t> scoresAboveSoftmax(const MemoryTimeline& tl, const FrameTable& frames, const std::string& key,
                                       int64_t size, int64_t softmaxLine)
{
    std::vector<std::pair<size_t, int64_t>> inCall; // allocation, its line in the call
    std::map<uint32_t, int64_t> lineOf;             // per stack
    for (size_t i = 0; i < tl.allocations.size(); ++i) {
        const uint32_t sid = tl.allocations[i].stack;
        auto it = lineOf.find(sid);
        if (it == lineOf.end())
            it = lineOf.emplace(sid, lineIn(frames, sid, key)).first;
        if (it->second >= 0)
            inCall.emplace_back(i, it->second);
    }
    std::stable_sort(inCall.begin(), inCall.end(), [&](const auto& x, const auto& y) {
        return tl.allocations[x.first].start < tl.allocations[y.first].start;
    });
    std::vector<size_t> out;
    for (size_t j = 0; j < inCall.size(); ++j) {
        const bool lastOfLine = j + 1 == inCall.size() || inCall[j + 1].second != inCall[j].second;
        if (lastOfLine && inCall[j].second < softmaxLine && tl.allocations[inCall[j].first].size == size)
            out.push_back(inCall[j].first);
    }
    return out;
}

} // namespace

void AllocationLaws::readSoftmax(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                 const FrameTable& frames, const std::vector<uint8_t>& softmaxMade, int64_t tokens,
                                 int64_t quadUnit, bool withoutShapes)
{
    // A softmax's output is the largest tensor it makes (its max and sum are b*h*s, which
    // may divide by b*s^2 too).
    std::map<std::string, int64_t> largest;
    std::vector<std::string> callerOf(m_laws.size());
    for (size_t i = 0; i < m_laws.size(); ++i)
        if (softmaxMade[i]) {
            callerOf[i] = softmaxCaller(frames, tl.allocations[i].stack);
            int64_t& m = largest[callerOf[i]];
            m = std::max(m, tl.allocations[i].size);
        }
    // One whose size is no multiple of b*s^2 may still be scores over s plus a few tokens
    // (a ViT's class token): b*s^2 stays possible, not read (the recorded shapes read it).
    auto readQuadratic = [&](size_t i) {
        AllocationLaw& law = m_laws[i];
        const int64_t z = tl.allocations[i].size;
        if (!(law.allowed & lawBit(SizeLaw::TokensBySeq)))
            m_quadPossible += z;
        law.allowed |= lawBit(SizeLaw::TokensBySeq);
        if (fitsUnit(z, quadUnit))
            setCentral(i, SizeLaw::TokensBySeq, LawEvidence::Stack, z);
    };
    for (size_t i = 0; i < m_laws.size(); ++i)
        if (softmaxMade[i] && tl.allocations[i].size == largest[callerOf[i]])
            readQuadratic(i);

    // Scores, masked scores and their copies are made in the call that takes their softmax,
    // at the softmax's size. Not when that size per token is one or three of a parameter's
    // (h*s = d makes the scores as large as q, k and v, which that call also makes).
    std::set<int64_t> paramSizes;
    for (size_t i = 0; i < tl.allocations.size() && i < classes.size(); ++i)
        if (classes[i].category == TensorCategory::Parameter)
            paramSizes.insert(tl.allocations[i].size);
    auto coincides = [&](int64_t size) {
        const int64_t perToken = size / std::max<int64_t>(1, tokens);
        return paramSizes.count(perToken) || (perToken % 3 == 0 && paramSizes.count(perToken / 3));
    };
    // A call that is handed q, k and v (a llama's scaled_dot_product_attention: no module call
    // inside it) makes none of them; at a coincident size, without recorded shapes (whose op
    // links join the scores to the softmax), its lines read them (scoresAboveSoftmax).
    const std::set<std::string> projecting = withoutShapes ? callsThroughModules(tl, frames) : std::set<std::string>{};
    std::map<std::string, std::set<int64_t>> softmaxSizes;
    std::map<std::string, std::pair<int64_t, int64_t>> aboveSoftmax; // call -> (size, the softmax's line)
    for (const auto& [key, size] : largest) {
        if (key.empty() || size <= kMinBlock)
            continue;
        if (!coincides(size))
            softmaxSizes[key].insert(size);
        else if (withoutShapes && !projecting.count(key))
            aboveSoftmax[key] = {size, -1};
    }
    for (size_t i = 0; i < m_laws.size() && !aboveSoftmax.empty(); ++i)
        if (softmaxMade[i])
            if (auto it = aboveSoftmax.find(callerOf[i]); it != aboveSoftmax.end() && it->second.second < 0)
                it->second.second = lineIn(frames, tl.allocations[i].stack, it->first);
    for (const auto& [key, sizeAndLine] : aboveSoftmax)
        for (size_t i : scoresAboveSoftmax(tl, frames, key, sizeAndLine.first, sizeAndLine.second))
            if (m_laws[i].central != SizeLaw::TokensBySeq && m_laws[i].evidence != LawEvidence::Category)
                readQuadratic(i);
    // And an s x s tensor of one byte per element made in that call, or in the call of the
    // function that called it (an attention module's forward that builds the mask and passes
    // it on), is its causal mask.
    std::set<std::string> softmaxCalls;
    for (size_t i = 0; i < m_laws.size(); ++i)
        if (softmaxMade[i])
            for (std::string& key : softmaxCallers(frames, tl.allocations[i].stack, 2))
                softmaxCalls.insert(std::move(key));
    if (softmaxCalls.empty())
        return;
    const int64_t s0 = quadUnit / std::max<int64_t>(1, tokens);
    auto boolMask = [&](int64_t z) { return s0 > 1 && fitsUnit(z, s0 * s0) && z < s0 * s0 + kMinBlock; };
    std::map<uint32_t, std::vector<std::string>> keysOf; // per stack: the call of each Python frame
    for (size_t i = 0; i < m_laws.size(); ++i) {
        AllocationLaw& law = m_laws[i];
        if (law.central == SizeLaw::TokensBySeq || law.evidence == LawEvidence::Category)
            continue;
        const uint32_t sid = tl.allocations[i].stack;
        auto it = keysOf.find(sid);
        if (it == keysOf.end())
            it = keysOf.emplace(sid, callKeys(frames, sid)).first;
        for (const std::string& key : it->second) {
            auto m = softmaxSizes.find(key);
            if (m != softmaxSizes.end() && m->second.count(tl.allocations[i].size)) {
                readQuadratic(i);
                break;
            }
            if (softmaxCalls.count(key) && boolMask(tl.allocations[i].size)) {
                setCentral(i, SizeLaw::SeqSquared, LawEvidence::Stack, tl.allocations[i].size);
                break;
            }
        }
    }
}

void AllocationLaws::readSizeOffset(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes, int b0, int s0)
{
    std::vector<int64_t> sizes;
    std::vector<size_t> index;
    for (size_t i = 0; i < m_laws.size() && i < classes.size(); ++i) {
        const int64_t z = tl.allocations[i].size;
        const TensorCategory c = classes[i].category;
        const bool transient = c == TensorCategory::Activation || c == TensorCategory::Temporary ||
                               c == TensorCategory::Unknown;
        if (classes[i].birthPhase == Phase::Forward && transient && z > kMinBlock &&
            m_laws[i].central != SizeLaw::TokensBySeq) {
            sizes.push_back(z);
            index.push_back(i);
        }
    }
    const SizeTokenOffset found = sizeTokenOffset(sizes, b0, s0);
    if (!found.offset)
        return;
    m_tokenOffset = found.offset;
    // Read by their size alone: b*s stays a reading. Every tensor over the tokens is over s0 + c.
    for (size_t k : found.scores) {
        setCentral(index[k], SizeLaw::TokensBySeq, LawEvidence::Size, sizes[k]);
        m_laws[index[k]].allowed |= lawBit(SizeLaw::Tokens);
        m_laws[index[k]].offset = true;
    }
    const int64_t tokens = int64_t(b0) * (s0 + found.offset);
    for (size_t i = 0; i < m_laws.size(); ++i)
        if (m_laws[i].central == SizeLaw::Tokens && m_laws[i].evidence == LawEvidence::Size &&
            fitsUnit(tl.allocations[i].size, tokens))
            m_laws[i].offset = true;
}

} // namespace headroom
