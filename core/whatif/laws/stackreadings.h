// SPDX-License-Identifier: MIT
#pragma once

// What an allocation's stack says to the what-if's laws (docs/whatif-model.md, "Laws"): whether
// a frame names attention, whether a softmax made it, the call it was made in, and its line of
// code in a form two runs of one job share.

#include "core/model/frametable.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace headroom {

/// A softmax or a torch attention kernel is the innermost named operation (torch's
/// `functional.py:softmax`, a user's `softmax`, a `Softmax` module's `softmax.py:forward`, or a
/// native softmax frame); the loss's log_softmax is not.
bool softmaxStack(const FrameTable& frames, uint32_t stack);
/// Any frame names attention (a user's own function included): b*s^2 is possible, not decided.
bool attentionContext(const FrameTable& frames, uint32_t stack);
/// A fused attention kernel is named (torch's scaled_dot_product_attention and its flash and
/// memory-efficient kernels, FlashAttention, xformers, an SDPA integration) by a native frame or
/// an installed package's Python frame: scores are never made. A user's own file of that name
/// does not count.
bool fusedAttentionStack(const FrameTable& frames, uint32_t stack);
/// Any allocation of the timeline has a stack that names a fused attention kernel.
bool anyFusedAttention(const MemoryTimeline& timeline, const FrameTable& frames);
/// Made by one of torch's own layers (`torch/nn/modules/`): a weight, never a mask.
bool torchLayerMade(const FrameTable& frames, uint32_t stack);
/// Made in the forward of one of torch's weight layers (`torch/nn/modules/linear.py` or
/// `conv.py` is the innermost Python frame): one use of a weight that autocast casts.
bool weightLayerMade(const FrameTable& frames, uint32_t stack);
/// The call a softmax was made from (see callKeys); empty when the stack has no Python frame.
std::string softmaxCaller(const FrameTable& frames, uint32_t stack);
/// The calls out from a softmax, innermost first, at most `count`: the function that took it,
/// the one that called that function (an attention module's forward), ...
std::vector<std::string> softmaxCallers(const FrameTable& frames, uint32_t stack, size_t count);
/// For each Python frame of a stack, innermost first, the call it names: the function (file and
/// name, not the line) and the Python frames that called it. Allocations made in one call of an
/// attention function share one; an MLP's do not.
std::vector<std::string> callKeys(const FrameTable& frames, uint32_t stack);
/// callKeys with the line each call was at when the allocation was made.
std::vector<std::pair<std::string, int64_t>> callKeyLines(const FrameTable& frames, uint32_t stack);
/// The calls (callKeys' form) that made some allocation of the timeline through a module call
/// (`_call_impl` inside them: a Linear's output, a rotary module's): an attention function
/// that projects q, k and v itself, unlike one that is handed them.
std::set<std::string> callsThroughModules(const MemoryTimeline& timeline, const FrameTable& frames);
/// A hash of the text of a stack's six innermost Python frames (all frames when it has none),
/// module-call plumbing left out: a driver script edited between two runs moves only its lines.
uint64_t lineHash(const FrameTable& frames, uint32_t stack);

/// attentionContext() and softmaxStack() once per stack: a million allocations share a few
/// thousand stacks.
class StackReadings {
public:
    explicit StackReadings(const FrameTable& frames) : m_frames(frames) {}
    bool attention(uint32_t stack) { return read(stack).first; }
    bool softmax(uint32_t stack) { return read(stack).second; }

private:
    const std::pair<bool, bool>& read(uint32_t stack);
    const FrameTable& m_frames;
    std::unordered_map<uint32_t, std::pair<bool, bool>> m_read;
};

} // namespace headroom
