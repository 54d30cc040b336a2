// SPDX-License-Identifier: MIT
#include "core/model/frametable.h"

#include <algorithm>
#include <array>

namespace headroom {

namespace {

uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

} // namespace

FrameTable::FrameTable()
{
    m_stackOffsets.push_back(0);
    m_stackOffsets.push_back(0); // stack 0: empty
}

uint32_t FrameTable::internFrame(std::string_view file, int64_t line, std::string_view name)
{
    Frame f{m_strings.intern(file), m_strings.intern(name), line};
    // Frames are few (hundreds to tens of thousands); pack the key exactly when possible.
    const uint64_t key = mix(mix(mix(0, f.file), f.name), static_cast<uint64_t>(line));
    auto [it, inserted] = m_frameIndex.try_emplace(key, static_cast<uint32_t>(m_frames.size()));
    if (!inserted) {
        // Verify; on a hash collision fall back to a linear search from the first id.
        const Frame& g = m_frames[it->second];
        if (g.file == f.file && g.name == f.name && g.line == f.line)
            return it->second;
        for (uint32_t i = 0; i < m_frames.size(); ++i) {
            const Frame& h = m_frames[i];
            if (h.file == f.file && h.name == f.name && h.line == f.line)
                return i;
        }
    }
    m_frames.push_back(f);
    return static_cast<uint32_t>(m_frames.size() - 1);
}

namespace {

/// A stack's hash: four independent lanes, so the multiplies overlap instead of waiting on
/// each other (a chain of dependent multiplies per frame was most of internStack's time).
uint64_t hashFrameIds(std::span<const uint32_t> ids)
{
    uint64_t h[4] = {ids.size(), 0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull};
    size_t i = 0;
    for (; i + 4 <= ids.size(); i += 4)
        for (int k = 0; k < 4; ++k)
            h[k] = (h[k] ^ ids[i + k]) * 0x9e3779b97f4a7c15ull;
    for (; i < ids.size(); ++i)
        h[0] = (h[0] ^ ids[i]) * 0x9e3779b97f4a7c15ull;
    return mix(mix(mix(h[0], h[1]), h[2]), h[3]);
}

} // namespace

uint32_t FrameTable::internStack(std::span<const uint32_t> frameIds)
{
    if (frameIds.empty())
        return kEmptyStack;
    if (m_stackSlots.empty())
        growStackIndex();
    const uint64_t h = hashFrameIds(frameIds);
    const size_t mask = m_stackSlots.size() - 1;
    size_t i = static_cast<size_t>(h >> 20) & mask;
    for (; m_stackSlots[i] != 0; i = (i + 1) & mask) {
        const uint32_t id = m_stackSlots[i];
        if (m_stackHashes[id] != h)
            continue;
        auto existing = stack(id);
        if (std::equal(existing.begin(), existing.end(), frameIds.begin(), frameIds.end()))
            return id;
    }
    const auto id = static_cast<uint32_t>(m_stackOffsets.size() - 1);
    m_stackFrames.insert(m_stackFrames.end(), frameIds.begin(), frameIds.end());
    m_stackOffsets.push_back(static_cast<uint32_t>(m_stackFrames.size()));
    m_stackHashes.resize(id + 1);
    m_stackHashes[id] = h;
    m_stackSlots[i] = id;
    if (stackCount() * 2 > m_stackSlots.size())
        growStackIndex();
    return id;
}

void FrameTable::growStackIndex()
{
    m_stackSlots.assign(m_stackSlots.empty() ? 1024 : m_stackSlots.size() * 2, 0);
    const size_t mask = m_stackSlots.size() - 1;
    for (uint32_t id = 1; id < stackCount(); ++id) {
        size_t i = static_cast<size_t>(m_stackHashes[id] >> 20) & mask;
        while (m_stackSlots[i] != 0)
            i = (i + 1) & mask;
        m_stackSlots[i] = id;
    }
}

std::span<const uint32_t> FrameTable::stack(uint32_t id) const
{
    if (id + 1 >= m_stackOffsets.size())
        return {};
    return {m_stackFrames.data() + m_stackOffsets[id], m_stackFrames.data() + m_stackOffsets[id + 1]};
}

namespace {

/// The innermost `File "PATH", line N, in NAME` of a Python traceback's text.
bool innermostTracebackFrame(std::string_view trace, std::string_view& file, int64_t& line, std::string_view& name)
{
    bool found = false;
    for (size_t at = trace.find("File \""); at != std::string_view::npos; at = trace.find("File \"", at + 1)) {
        const size_t fileStart = at + 6;
        const size_t fileEnd = trace.find('"', fileStart);
        if (fileEnd == std::string_view::npos || trace.compare(fileEnd, 8, "\", line ") != 0)
            continue;
        size_t p = fileEnd + 8;
        int64_t n = 0;
        const size_t digits = p;
        while (p < trace.size() && trace[p] >= '0' && trace[p] <= '9' && n < (int64_t(1) << 40))
            n = n * 10 + (trace[p++] - '0');
        if (p == digits || trace.compare(p, 5, ", in ") != 0)
            continue;
        const size_t nameStart = p + 5;
        size_t nameEnd = trace.find_first_of("\r\n", nameStart);
        if (nameEnd == std::string_view::npos)
            nameEnd = trace.size();
        file = trace.substr(fileStart, fileEnd - fileStart);
        line = n;
        name = trace.substr(nameStart, nameEnd - nameStart);
        found = true;
    }
    return found;
}

} // namespace

void FrameTable::setFx(uint32_t frame, const FxFrameText& text)
{
    if (m_fx.count(frame))
        return;
    FxFrame fx{m_strings.intern(text.op), m_strings.intern(text.node), m_strings.intern(text.target),
               m_strings.intern(text.originalTrace)};
    std::string_view file, name;
    if (innermostTracebackFrame(text.originalTrace, file, fx.sourceLine, name)) {
        fx.hasSource = true;
        fx.sourceFile = m_strings.intern(file);
        fx.sourceName = m_strings.intern(name);
        fx.sourceFrame = internFrame(file, fx.sourceLine, name);
    }
    m_fx.emplace(frame, fx);
}

const FxFrame* FrameTable::fx(uint32_t frame) const
{
    const auto it = m_fx.find(frame);
    return it == m_fx.end() ? nullptr : &it->second;
}

std::string FrameTable::formatRawFrame(uint32_t id) const
{
    const Frame& f = m_frames[id];
    std::string s(m_strings.get(f.file));
    s += ':';
    s += std::to_string(f.line);
    s += ':';
    s += m_strings.get(f.name);
    return s;
}

std::string FrameTable::formatFrame(uint32_t id) const
{
    const FxFrame* fx = m_fx.empty() ? nullptr : this->fx(id);
    if (!fx)
        return formatRawFrame(id);
    const std::string_view node = m_strings.get(fx->node);
    std::string compiled = " [compiled: " + std::string(node.empty() ? std::string_view("FX node") : node);
    if (!fx->hasSource)
        return formatRawFrame(id) + compiled + "]";
    std::string s(m_strings.get(fx->sourceFile));
    s += ':' + std::to_string(fx->sourceLine) + ':';
    s += m_strings.get(fx->sourceName);
    return s + compiled + " at " + formatRawFrame(id) + "]";
}

bool FrameTable::isNoiseFrame(uint32_t id) const
{
    static constexpr std::array<std::string_view, 8> kNames = {
        "unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
        "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"};
    static constexpr std::array<std::string_view, 10> kFiles = {
        "core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
        "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h"};
    // The interpreter's and the thread's own start, and CPython's call machinery between two
    // Python frames: the icicle spent 15 rows on them before the user's code, and they split
    // one Python path into branches (names matched from their start: at::_ops::clone is not).
    // A C++ thread starts in libstdc++'s execute_native_thread_routine under pthread and clone
    // (which symbolizers without glibc's symbols name after a neighbour, __xmknodat).
    static constexpr std::array<std::string_view, 17> kPrefixes = {
        "__libc_init_first", "__libc_start_call_main", "Py_BytesMain", "Py_RunMain", "pymain_", "_PyRun_",
        "pyrun_", "run_mod", "run_eval_code_obj", "slot_tp_", "method_vectorcall", "cfunction_", "_PyObject_",
        "_PyFunction_", "execute_native_thread_routine", "pthread_", "__xmknodat"};
    static constexpr std::array<std::string_view, 5> kExact = {"clone", "clone3", "__clone", "__clone3", "start_thread"};
    const Frame& f = m_frames[id];
    const std::string_view name = m_strings.get(f.name);
    const std::string_view file = m_strings.get(f.file);
    for (auto n : kPrefixes)
        if (name.substr(0, n.size()) == n)
            return true;
    for (auto n : kExact)
        if (name == n)
            return true;
    for (auto n : kNames)
        if (name.find(n) != std::string_view::npos)
            return true;
    for (auto n : kFiles)
        if (file.find(n) != std::string_view::npos)
            return true;
    return false;
}

bool FrameTable::isPythonFrame(uint32_t id) const
{
    const std::string_view file = m_strings.get(m_frames[id].file);
    return file.size() > 3 && file.substr(file.size() - 3) == ".py";
}

bool FrameTable::isPlumbingFrame(uint32_t id) const
{
    static constexpr std::array<std::string_view, 14> kPlumbing = {
        "c10::", "CachingAllocator", "at::_ops::", "at::native::", "at::detail::", "at::empty",
        "Dispatcher", "BoxedKernel", "wrap_kernel_functor", "make_boxed", "wrapper_CUDA",
        "torch::autograd::VariableType", "at::meta::", "at::cuda::"};
    const std::string_view name = m_strings.get(m_frames[id].name);
    for (auto p : kPlumbing)
        if (name.find(p) != std::string_view::npos)
            return true;
    return false;
}

std::vector<std::string> FrameTable::topFrameLines(uint32_t stackId, size_t count) const
{
    std::vector<std::string> out;
    for (uint32_t f : topFrames(stackId, count))
        out.push_back(formatFrame(f));
    return out;
}

std::vector<uint32_t> FrameTable::topFrames(uint32_t stackId, size_t count) const
{
    // Python frames say where in the user's program; without them (the autograd thread,
    // C++-only stacks) show the C++ frames that are not allocator or dispatcher plumbing.
    std::vector<uint32_t> out;
    bool anyPython = false;
    for (uint32_t f : stack(stackId))
        anyPython |= isPythonFrame(f);
    for (uint32_t f : stack(stackId)) {
        if (out.size() >= count)
            break;
        if (isNoiseFrame(f))
            continue;
        if (anyPython ? !isPythonFrame(f) : isPlumbingFrame(f))
            continue;
        out.push_back(f);
    }
    if (out.empty()) // everything was plumbing: better something than nothing
        for (uint32_t f : stack(stackId))
            if (out.size() < count && !isNoiseFrame(f))
                out.push_back(f);
    return out;
}

} // namespace headroom
