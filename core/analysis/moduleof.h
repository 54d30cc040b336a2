// SPDX-License-Identifier: MIT
#pragma once

// Which nn.Module made one allocation, most exact first: the qualified name a Headroom
// recorder wrote on the entry (`headroom_tensor.module`); else the entry's `user_metadata` when
// it reads as a qualified name ("layers.0.attn": what PyTorch's component tracker sets through
// `_set_memory_metadata`); else the frame Module._call_impl called, which is what a plain
// snapshot's stacks tell (the module's class, by the file and line of its forward). One answer for the module view, its filter, `analyze --by-module` and
// `classify`, so that they cannot disagree.

#include "core/model/frametable.h"
#include "core/model/snapshotmodel.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace headroom {

/// The Python frame Module._call_impl (or _wrapped_call_impl) called, innermost module
/// first: the nearest Python frame inside the innermost such call (native interpreter frames
/// may sit between them). For torch.compile's generated code with FX information, the
/// innermost frame of the node's original trace (the model's line the kernel came from),
/// since the frame _call_impl called is dynamo's wrapper. UINT32_MAX when the stack has none.
uint32_t moduleForwardFrame(const FrameTable& ft, uint32_t stack);

/// For a stack with no module forward: the `__init__` frame that called vLLM's or SGLang's
/// `create_weights` (their linear methods' weight loaders, which every layer's constructor
/// calls), the layer the weights belong to; UINT32_MAX when the stack has none. Written from
/// vLLM's and SGLang's public sources (model_executor/layers/linear.py, quantization methods).
uint32_t engineLayerConstructorFrame(const FrameTable& ft, uint32_t stack);

struct ModuleOf {
    bool named = false;                 ///< the recorder or user_metadata named it (`name`, "" is the root module)
    bool fromMetadata = false;          ///< named by user_metadata, not by the recorder
    std::string_view name;              ///< valid while the trace is
    uint32_t forwardFrame = UINT32_MAX; ///< from the stack; UINT32_MAX: no module frames
    /// forwardFrame is the constructor (`__init__`) of the layer that made it, not a forward:
    /// an inference engine's weights, which its layers' create_weights makes while the model
    /// is built (engineLayerConstructorFrame).
    bool built = false;
    bool any() const { return named || forwardFrame != UINT32_MAX; }
    /// One key per module: the recorder's name where there is one, else the forward frame.
    /// Empty when no module made it.
    std::string key() const;
};

/// The module that made the allocation born at `event` with `stack`.
ModuleOf moduleOf(const FrameTable& ft, const TraceEvents& events, int64_t event, uint32_t stack);

/// moduleOf() for many allocations of one device: the stack walk is done once per stack id
/// (a million allocations share a few thousand stacks). Holds references to the trace.
class ModuleResolver {
public:
    ModuleResolver(const FrameTable& ft, const TraceEvents& events) : m_ft(ft), m_events(events) {}
    ModuleOf operator()(int64_t event, uint32_t stack);

private:
    const FrameTable& m_ft;
    const TraceEvents& m_events;
    struct StackModule {
        uint32_t frame = UINT32_MAX;
        bool built = false;
    };
    std::unordered_map<uint32_t, StackModule> m_moduleOfStack;
};

/// Whether `user_metadata` reads as a module's qualified name: dotted parts of letters, digits
/// and underscores ("layers.0.attn", "encoder"), nothing else ("step 3", "kv cache: layer 3").
bool isQualifiedModuleName(std::string_view text);

/// "recorded", "user_metadata", "stack" or "constructor" (ModuleOf::built): where the module's
/// name came from, as the JSON output words it.
std::string_view moduleSourceKey(const ModuleOf& m);

/// The key of what no module's forward made (parameters, gradients, the loss...): the module
/// view's "(outside any module's forward)" row.
inline constexpr std::string_view kOutsideModulesKey = "-";

/// Whether `m` is the module `key` names (a ModuleOf::key() or kOutsideModulesKey) or lies
/// under it, as the module tree's rows include their children: "n:blocks.0" holds
/// "blocks.0.attn", and "n:" (the root module) every recorded name.
bool moduleUnder(const ModuleOf& m, std::string_view key);

} // namespace headroom
