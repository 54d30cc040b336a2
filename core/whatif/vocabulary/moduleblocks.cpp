// SPDX-License-Identifier: MIT
#include "core/whatif/vocabulary/moduleblocks.h"

#include "core/model/recordedtensors.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

namespace {

struct LayerName {
    std::string container;
    long index = 0;
    bool inner = false; ///< the name goes on past the index: a module inside the layer
};

/// "blocks.blocks.3.attn.q" -> {"blocks.blocks", 3}: the first all-digit part after another.
std::optional<LayerName> layerOf(std::string_view name)
{
    size_t start = 0;
    while (start < name.size()) {
        const size_t dot = name.find('.', start);
        const std::string_view part = name.substr(start, dot == name.npos ? name.npos : dot - start);
        const bool digits = !part.empty() && part.size() < 9 &&
                            std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits && start > 0)
            return LayerName{std::string(name.substr(0, start - 1)), std::stol(std::string(part)), dot != name.npos};
        if (dot == name.npos)
            break;
        start = dot + 1;
    }
    return std::nullopt;
}

} // namespace

ModuleBlocks moduleBlocks(const MemoryTimeline& tl, const std::vector<uint32_t>& saved,
                          const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors, const StringPool& strings)
{
    ModuleBlocks out;
    if (tensors.empty())
        return out;
    std::map<std::string, std::map<long, std::vector<uint32_t>>> byContainer;
    std::map<std::string, bool> hasInner;
    for (uint32_t i : saved) {
        const RecordedTensor* t = recordedTensorAt(tensors, tl.allocations[i].start);
        if (!t || !t->hasModule)
            continue;
        if (const auto layer = layerOf(strings.get(t->module))) {
            byContainer[layer->container][layer->index].push_back(i);
            hasInner[layer->container] = hasInner[layer->container] || layer->inner;
        }
    }
    // A list of leaf modules (a stem's conv, norm and activation in a Sequential) is one
    // stage, not layers a user checkpoints one by one: only lists of modules with modules inside.
    for (auto& [container, layers] : byContainer) {
        if (layers.size() < 2 || !hasInner[container])
            continue;
        ++out.containers;
        for (auto& [index, allocs] : layers)
            out.blocks.push_back(std::move(allocs));
    }
    auto firstStart = [&](const std::vector<uint32_t>& b) {
        int64_t s = INT64_MAX;
        for (uint32_t i : b)
            s = std::min<int64_t>(s, tl.allocations[i].start);
        return s;
    };
    std::sort(out.blocks.begin(), out.blocks.end(),
              [&](const auto& x, const auto& y) { return firstStart(x) < firstStart(y); });
    return out;
}

} // namespace headroom
