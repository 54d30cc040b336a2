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

ModuleOf moduleOf(const FrameTable& ft, const TraceEvents& events, int64_t event, uint32_t stack)
{
    ModuleOf m;
    if (const RecordedTensor* rec = recordedTensorAt(events.tensors, event); rec && rec->hasModule) {
        m.named = true;
        m.name = ft.strings().get(rec->module);
    }
    m.forwardFrame = moduleForwardFrame(ft, stack);
    return m;
}

} // namespace headroom
