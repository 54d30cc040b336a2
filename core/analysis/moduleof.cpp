// SPDX-License-Identifier: MIT
#include "core/analysis/moduleof.h"

#include "core/model/recordedtensors.h"

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
    return m.fromMetadata ? "user_metadata" : m.named ? "recorded" : "stack";
}

namespace {

ModuleOf moduleOfForward(const FrameTable& ft, const TraceEvents& events, int64_t event, uint32_t forwardFrame)
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
    return m;
}

} // namespace

ModuleOf moduleOf(const FrameTable& ft, const TraceEvents& events, int64_t event, uint32_t stack)
{
    return moduleOfForward(ft, events, event, moduleForwardFrame(ft, stack));
}

ModuleOf ModuleResolver::operator()(int64_t event, uint32_t stack)
{
    auto it = m_forwardOfStack.find(stack);
    if (it == m_forwardOfStack.end())
        it = m_forwardOfStack.emplace(stack, moduleForwardFrame(m_ft, stack)).first;
    return moduleOfForward(m_ft, m_events, event, it->second);
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
