// SPDX-License-Identifier: MIT
#include "core/whatif/laws/stackreadings.h"

#include "core/analysis/usercode.h"

#include <algorithm>
#include <cctype>
#include <span>
#include <string_view>
#include <unordered_set>

namespace headroom {

namespace {

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

bool contains(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }

/// What a Python frame is called: its function, or for a module's `forward` also its file
/// (`softmax.py:forward` is a Softmax module's), lower case.
std::string pythonName(const FrameTable& frames, uint32_t id)
{
    const Frame& f = frames.frame(id);
    std::string name = lower(frames.strings().get(f.name));
    if (name == "forward") {
        std::string_view file = frames.strings().get(f.file);
        if (const size_t slash = file.find_last_of('/'); slash != std::string_view::npos)
            file.remove_prefix(slash + 1);
        name.append(1, ' ').append(lower(file));
    }
    return name;
}

bool lossName(const std::string& n) { return contains(n, "log_softmax") || contains(n, "cross_entropy") || contains(n, "nll_loss"); }

/// A function call, named by the function (file and name, not the line) and every frame that
/// called it (their Python frames): allocations made in one call of an attention function share it, an MLP's do not.
std::string callKey(const FrameTable& frames, std::span<const uint32_t> stack, size_t at)
{
    const Frame& f = frames.frame(stack[at]);
    std::string key;
    auto put = [&key](uint32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(f.file);
    put(f.name);
    for (size_t k = at + 1; k < stack.size(); ++k)
        if (frames.isPythonFrame(stack[k])) // native frames between differ from call to call
            put(stack[k]);
    return key;
}

} // namespace

bool softmaxStack(const FrameTable& frames, uint32_t stack)
{
    for (uint32_t id : frames.stack(stack)) {
        const bool python = frames.isPythonFrame(id);
        const std::string name = python ? pythonName(frames, id) : lower(frames.strings().get(frames.frame(id).name));
        if (lossName(name))
            return false;
        if (!python) {
            if (contains(name, "softmax")) // at::_ops::_softmax, SoftmaxBackward0: the kernel itself
                return true;
            continue;
        }
        return contains(name, "softmax"); // the innermost Python function: torch's or the user's softmax
    }
    return false;
}

bool attentionContext(const FrameTable& frames, uint32_t stack)
{
    bool attention = false;
    for (uint32_t id : frames.stack(stack)) {
        const std::string name =
            frames.isPythonFrame(id) ? pythonName(frames, id) : lower(frames.strings().get(frames.frame(id).name));
        if (lossName(name))
            return false; // the loss's b*s*V tensors may divide by s^2 too
        for (const char* w : {"attn", "attention", "softmax", "scaled_dot", "sdpa", "baddbmm"})
            attention = attention || contains(name, w);
    }
    return attention;
}

bool fusedAttentionStack(const FrameTable& frames, uint32_t stack)
{
    for (uint32_t id : frames.stack(stack)) {
        const Frame& f = frames.frame(id);
        // A kernel's own frame, or a library's Python: a user's file named after the
        // operation (scaled_dot_product_attention.py computing q k^T itself) is not one.
        if (frames.isPythonFrame(id) && !isLibraryFile(frames.strings().get(f.file)))
            continue;
        const std::string text = lower(frames.strings().get(f.name)) + " " + lower(frames.strings().get(f.file));
        for (const char* w : {"scaled_dot_product", "flash_attn", "flash_attention", "efficient_attention",
                              "xformers", "sdpa"})
            if (contains(text, w))
                return true;
    }
    return false;
}

bool anyFusedAttention(const MemoryTimeline& timeline, const FrameTable& frames)
{
    std::unordered_map<uint32_t, bool> seen; // a few thousand stacks for a million allocations
    for (const Allocation& a : timeline.allocations) {
        auto it = seen.find(a.stack);
        if (it == seen.end())
            it = seen.emplace(a.stack, fusedAttentionStack(frames, a.stack)).first;
        if (it->second)
            return true;
    }
    return false;
}

bool torchLayerMade(const FrameTable& frames, uint32_t stack)
{
    for (uint32_t id : frames.stack(stack))
        if (frames.isPythonFrame(id))
            return frames.strings().get(frames.frame(id).file).find("torch/nn/modules/") != std::string_view::npos;
    return false;
}

bool weightLayerMade(const FrameTable& frames, uint32_t stack)
{
    for (uint32_t id : frames.stack(stack)) {
        if (!frames.isPythonFrame(id))
            continue;
        const Frame& f = frames.frame(id);
        const std::string_view file = frames.strings().get(f.file);
        return frames.strings().get(f.name) == "forward" &&
               (file.ends_with("torch/nn/modules/linear.py") || file.ends_with("torch/nn/modules/conv.py"));
    }
    return false;
}

std::vector<std::string> softmaxCallers(const FrameTable& frames, uint32_t stackId, size_t count)
{
    const auto stack = frames.stack(stackId);
    std::vector<std::string> out;
    bool insideSoftmax = false;
    for (size_t k = 0; k < stack.size() && out.size() < count; ++k) {
        if (!frames.isPythonFrame(stack[k]))
            continue;
        const std::string name = pythonName(frames, stack[k]);
        if (!insideSoftmax && contains(name, "softmax")) {
            insideSoftmax = true;
            continue;
        }
        if (name == "_call_impl" || name == "_wrapped_call_impl")
            continue; // a module's call: its caller is further out
        out.push_back(callKey(frames, stack, k));
    }
    return out;
}

std::string softmaxCaller(const FrameTable& frames, uint32_t stackId)
{
    const auto callers = softmaxCallers(frames, stackId, 1);
    return callers.empty() ? std::string() : callers.front();
}

std::vector<std::string> callKeys(const FrameTable& frames, uint32_t stackId)
{
    std::vector<std::string> keys;
    for (auto& [key, line] : callKeyLines(frames, stackId))
        keys.push_back(std::move(key));
    return keys;
}

std::vector<std::pair<std::string, int64_t>> callKeyLines(const FrameTable& frames, uint32_t stackId)
{
    std::vector<std::pair<std::string, int64_t>> keys;
    const auto stack = frames.stack(stackId);
    for (size_t k = 0; k < stack.size(); ++k)
        if (frames.isPythonFrame(stack[k]))
            keys.emplace_back(callKey(frames, stack, k), frames.frame(stack[k]).line);
    return keys;
}

std::set<std::string> callsThroughModules(const MemoryTimeline& timeline, const FrameTable& frames)
{
    std::set<std::string> out;
    std::unordered_set<uint32_t> seen; // a few thousand stacks for a million allocations
    for (const Allocation& a : timeline.allocations) {
        if (!seen.insert(a.stack).second)
            continue;
        const auto stack = frames.stack(a.stack);
        bool throughModule = false;
        for (size_t k = 0; k < stack.size(); ++k) {
            if (!frames.isPythonFrame(stack[k]))
                continue;
            const std::string_view name = frames.strings().get(frames.frame(stack[k]).name);
            if (throughModule)
                out.insert(callKey(frames, stack, k));
            throughModule = throughModule || name == "_call_impl" || name == "_wrapped_call_impl";
        }
    }
    return out;
}

uint64_t lineHash(const FrameTable& frames, uint32_t stackId)
{
    constexpr size_t kLineFrames = 6;
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::string_view text) {
        for (unsigned char c : text)
            h = (h ^ c) * 1099511628211ull;
        h = (h ^ '|') * 1099511628211ull;
    };
    const auto stack = frames.stack(stackId);
    const bool anyPython = std::any_of(stack.begin(), stack.end(), [&](uint32_t id) { return frames.isPythonFrame(id); });
    size_t used = 0;
    for (uint32_t id : stack) {
        if (used == kLineFrames)
            break;
        if (anyPython && !frames.isPythonFrame(id))
            continue;
        const std::string_view name = frames.strings().get(frames.frame(id).name);
        if (name == "_call_impl" || name == "_wrapped_call_impl")
            continue;
        mix(frames.formatFrame(id));
        ++used;
    }
    return h;
}

const std::pair<bool, bool>& StackReadings::read(uint32_t stack)
{
    auto it = m_read.find(stack);
    if (it == m_read.end())
        it = m_read.emplace(stack, std::make_pair(attentionContext(m_frames, stack), softmaxStack(m_frames, stack))).first;
    return it->second;
}

} // namespace headroom
