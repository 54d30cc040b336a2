// SPDX-License-Identifier: MIT
#include "core/analysis/moduleof.h"

#include "core/model/recordedtensors.h"

#include <utility>

namespace headroom {

uint32_t moduleForwardFrame(const FrameTable& ft, uint32_t stack)
{
    const auto frames = ft.stack(stack);
    uint32_t inner = UINT32_MAX; // the last Python frame seen, walking outwards
    for (uint32_t f : frames) {
        if (!ft.isPythonFrame(f))
            continue;
        // Compiled code: the FX node's own trace ends in the model's forward line, which is
        // where dynamo's frames would otherwise leave only its wrapper.
        if (const FxFrame* fx = ft.anyFx() ? ft.fx(f) : nullptr; fx && fx->hasSource)
            return fx->sourceFrame;
        const std::string_view name = ft.strings().get(ft.frame(f).name);
        if (name == "_call_impl" || name == "_wrapped_call_impl")
            return inner;
        inner = f;
    }
    return UINT32_MAX;
}

uint32_t engineLayerConstructorFrame(const FrameTable& ft, uint32_t stack)
{
    bool loaderSeen = false;
    for (uint32_t f : ft.stack(stack)) { // innermost first
        if (!ft.isPythonFrame(f))
            continue;
        const std::string_view name = ft.strings().get(ft.frame(f).name);
        if (loaderSeen && name == "__init__")
            return f;
        if (name == "create_weights") {
            const std::string_view file = ft.strings().get(ft.frame(f).file);
            loaderSeen = file.find("vllm/") != std::string_view::npos || file.find("sglang/") != std::string_view::npos;
        }
    }
    return UINT32_MAX;
}

std::string ModuleOf::key() const
{
    if (named)
        return "n:" + std::string(name);
    return forwardFrame == UINT32_MAX ? std::string() : "f:" + std::to_string(forwardFrame);
}

bool isQualifiedModuleName(std::string_view text)
{
    if (text.empty() || text.size() > 512 || text.front() == '.' || text.back() == '.')
        return false;
    char previous = 0;
    for (char c : text) {
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!word && !(c == '.' && previous != '.'))
            return false;
        previous = c;
    }
    return true;
}

std::string_view moduleSourceKey(const ModuleOf& m)
{
    return m.fromMetadata ? "user_metadata" : m.named ? "recorded" : m.built ? "constructor" : "stack";
}

namespace {

ModuleOf moduleOfForward(const FrameTable& ft, const TraceEvents& events, int64_t event, uint32_t forwardFrame,
                         bool built)
{
    ModuleOf m;
    if (const RecordedTensor* rec = recordedTensorAt(events.tensors, event); rec && rec->hasModule) {
        m.named = true;
        m.name = ft.strings().get(rec->module);
    } else if (const std::string_view meta = entryStringAt(events.userMetadata, ft.strings(), event);
               isQualifiedModuleName(meta)) {
        m.named = m.fromMetadata = true;
        m.name = meta;
    }
    m.forwardFrame = forwardFrame;
    m.built = built && !m.named;
    return m;
}

/// The stack's module frame: its forward's, else the engine layer whose constructor made it.
std::pair<uint32_t, bool> stackModuleFrame(const FrameTable& ft, uint32_t stack)
{
    if (const uint32_t forward = moduleForwardFrame(ft, stack); forward != UINT32_MAX)
        return {forward, false};
    const uint32_t built = engineLayerConstructorFrame(ft, stack);
    return {built, built != UINT32_MAX};
}

} // namespace

ModuleOf moduleOf(const FrameTable& ft, const TraceEvents& events, int64_t event, uint32_t stack)
{
    const auto [frame, built] = stackModuleFrame(ft, stack);
    return moduleOfForward(ft, events, event, frame, built);
}

ModuleOf ModuleResolver::operator()(int64_t event, uint32_t stack)
{
    auto it = m_moduleOfStack.find(stack);
    if (it == m_moduleOfStack.end()) {
        const auto [frame, built] = stackModuleFrame(m_ft, stack);
        it = m_moduleOfStack.emplace(stack, StackModule{frame, built}).first;
    }
    return moduleOfForward(m_ft, m_events, event, it->second.frame, it->second.built);
}

bool moduleUnder(const ModuleOf& m, std::string_view key)
{
    if (key == kOutsideModulesKey)
        return !m.any();
    if (key.starts_with("f:"))
        return !m.named && m.forwardFrame != UINT32_MAX && key.substr(2) == std::to_string(m.forwardFrame);
    if (!key.starts_with("n:") || !m.named)
        return false;
    const std::string_view prefix = key.substr(2);
    if (prefix.empty() || m.name == prefix)
        return true;
    return m.name.size() > prefix.size() && m.name.starts_with(prefix) && m.name[prefix.size()] == '.';
}

} // namespace headroom
