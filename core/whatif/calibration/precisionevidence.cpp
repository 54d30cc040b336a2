// SPDX-License-Identifier: MIT
#include "core/whatif/calibration/precisionevidence.h"

#include <string_view>

namespace headroom {

namespace {

bool contains(std::string_view s, std::string_view w) { return s.find(w) != std::string_view::npos; }

bool endsWith(std::string_view s, std::string_view w)
{
    return s.size() >= w.size() && s.substr(s.size() - w.size()) == w;
}

} // namespace

PrecisionEvidence PrecisionEvidence::read(const FrameTable& frames)
{
    // Distinct frames are few (hundreds to thousands) however long the history is.
    PrecisionEvidence ev;
    const StringPool& strings = frames.strings();
    for (uint32_t id = 0; id < frames.frameCount(); ++id) {
        const Frame& f = frames.frame(id);
        const std::string_view name = strings.get(f.name);
        const std::string_view file = strings.get(f.file);
        if (contains(name, "::"))
            ev.cppFrames = true;
        if (contains(name, "at::autocast::"))
            ev.autocast = true;
        if (contains(name, "_amp_update_scale") || contains(name, "_amp_foreach_non_finite_check_and_unscale") ||
            endsWith(file, "grad_scaler.py"))
            ev.gradScaler = true;
        if ((name == "half" || name == "bfloat16") && endsWith(file, "torch/nn/modules/module.py"))
            ev.moduleTo16 = true;
    }
    return ev;
}

std::optional<Precision> PrecisionEvidence::precision() const
{
    if (autocast)
        return gradScaler ? Precision::AmpFp16 : Precision::AmpBf16;
    if (moduleTo16)
        return Precision::Bf16;
    return std::nullopt;
}

std::string PrecisionEvidence::detail() const
{
    if (autocast)
        return gradScaler ? "C++ stacks show at::autocast frames and a GradScaler" : "C++ stacks show at::autocast frames";
    if (moduleTo16)
        return "parameters converted by Module.half() / Module.bfloat16()";
    if (cppFrames)
        return "C++ stacks show no at::autocast frames: fp32 or pure bf16, projected as fp32 with pure bf16 in the "
               "band; the measured precision settles it";
    return "no evidence in the stacks: projected as fp32 with autocast and pure bf16 in the band; the measured "
           "precision settles it";
}

std::vector<Precision> PrecisionEvidence::candidates() const
{
    if (precision())
        return {*precision()};
    if (cppFrames)
        return {Precision::Fp32, Precision::Bf16};
    return {Precision::Fp32, Precision::AmpBf16, Precision::Bf16};
}

} // namespace headroom
