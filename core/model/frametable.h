// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/stringpool.h"

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace headroom {

struct Frame {
    uint32_t file = 0; // StringPool id
    uint32_t name = 0; // StringPool id
    int64_t line = 0;
};

/// What torch.compile's FX augmentation (`augment_with_fx_traces=True`) writes on a frame
/// of generated code, as read: the graph node and the model's source behind it.
struct FxFrameText {
    std::string_view op, node, target, originalTrace;
    bool empty() const { return op.empty() && node.empty() && target.empty() && originalTrace.empty(); }
};

/// The same, interned, with the model's source line taken from the node's stack trace.
struct FxFrame {
    uint32_t op = 0, node = 0, target = 0, originalTrace = 0; ///< StringPool ids ("" = 0)
    /// The innermost `File "...", line N, in f` of originalTrace; hasSource false when the
    /// trace has none.
    bool hasSource = false;
    uint32_t sourceFile = 0, sourceName = 0;
    int64_t sourceLine = 0;
    uint32_t sourceFrame = UINT32_MAX; ///< the source line as a frame of this table
};

/// Interned frames and call stacks. A stack is a sequence of frame ids, innermost
/// first (as PyTorch writes them); stack id 0 is the empty stack. Equal frames and
/// equal stacks get the same id however often the input repeats them, so a million
/// trace entries that share a few thousand tracebacks cost a few thousand stacks.
class FrameTable {
public:
    static constexpr uint32_t kEmptyStack = 0;

    FrameTable();
    FrameTable(const FrameTable&) = delete;
    FrameTable& operator=(const FrameTable&) = delete;
    FrameTable(FrameTable&&) noexcept = default;
    FrameTable& operator=(FrameTable&&) noexcept = default;

    StringPool& strings() { return m_strings; }
    const StringPool& strings() const { return m_strings; }

    uint32_t internFrame(std::string_view file, int64_t line, std::string_view name);
    uint32_t internStack(std::span<const uint32_t> frameIds);

    const Frame& frame(uint32_t id) const { return m_frames[id]; }
    std::span<const uint32_t> stack(uint32_t id) const;
    uint32_t frameCount() const { return static_cast<uint32_t>(m_frames.size()); }
    uint32_t stackCount() const { return static_cast<uint32_t>(m_stackOffsets.size() - 1); }

    /// Records the FX node behind a frame of generated code (the first one given wins).
    void setFx(uint32_t frame, const FxFrameText& fx);
    /// Null for a frame without FX information.
    const FxFrame* fx(uint32_t frame) const;
    bool anyFx() const { return !m_fx.empty(); }

    /// "file:line:name", as PyTorch's viewer prints a frame. A frame of torch.compile's
    /// generated code with FX information reads as the model's source line with the kernel
    /// beside it: "model.py:12:forward [compiled: addmm at /tmp/torchinductor/ab.py:30:call]".
    std::string formatFrame(uint32_t id) const;
    /// "file:line:name" of the frame itself, never the FX source.
    std::string formatRawFrame(uint32_t id) const;
    /// True for interpreter and allocator plumbing frames that the official viewer hides.
    bool isNoiseFrame(uint32_t id) const;
    bool isPythonFrame(uint32_t id) const;
    /// Allocator, dispatcher and kernel-wrapper C++ frames: true but uninformative.
    bool isPlumbingFrame(uint32_t id) const;
    /// The `count` most telling frames, innermost first: the Python frames when the stack
    /// has any, else the C++ frames that are neither noise nor plumbing.
    std::vector<uint32_t> topFrames(uint32_t stackId, size_t count) const;
    /// topFrames() as "file:line:name" lines.
    std::vector<std::string> topFrameLines(uint32_t stackId, size_t count) const;

private:
    StringPool m_strings;
    std::vector<Frame> m_frames;
    std::unordered_map<uint32_t, FxFrame> m_fx; // few: the frames of compiled graphs
    std::unordered_map<uint64_t, uint32_t> m_frameIndex; // key hash -> first id (chained by probe)
    std::vector<uint32_t> m_stackFrames;
    std::vector<uint32_t> m_stackOffsets; // size stackCount()+1
    // Stacks are looked up once per trace entry whose traceback the file did not share
    // (most of them: Python's pickler shares only the very same list object), so the index
    // is an open-addressing table of stack ids (0 = free) with each stack's hash kept
    // beside it: a probe compares the hash before the frames, and growing rehashes nothing.
    std::vector<uint32_t> m_stackSlots;
    std::vector<uint64_t> m_stackHashes; // per stack id
    void growStackIndex();
};

} // namespace headroom
