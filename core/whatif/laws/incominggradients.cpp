// SPDX-License-Identifier: MIT
#include "core/whatif/laws/incominggradients.h"

#include "core/model/recordedtensors.h"

#include <algorithm>
#include <map>
#include <set>

namespace headroom {

namespace {

/// The gradients of each size, and whether one was kept from before a given backward event.
class KeptGradients {
public:
    KeptGradients(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes)
    {
        for (size_t i = 0; i < tl.allocations.size() && i < classes.size(); ++i) {
            if (classes[i].category == TensorCategory::Gradient)
                m_bySize[tl.allocations[i].size].push_back(&tl.allocations[i]);
            if (classes[i].birthPhase == Phase::Forward)
                m_forwardBirths.push_back(tl.allocations[i].start);
        }
        std::sort(m_forwardBirths.begin(), m_forwardBirths.end());
    }
    bool hasSize(int64_t size) const { return m_bySize.count(size) != 0; }
    /// A gradient of `size` alive at `event` and born before a forward that precedes it.
    bool keptAt(int64_t size, int64_t event) const
    {
        const auto it = m_bySize.find(size);
        return it != m_bySize.end() &&
               std::any_of(it->second.begin(), it->second.end(), [&](const Allocation* g) { return kept(*g, event); });
    }

private:
    bool kept(const Allocation& g, int64_t event) const
    {
        if (!g.aliveAfter(event))
            return false;
        if (g.start == Allocation::kBeforeWindow)
            return true;
        const auto f = std::upper_bound(m_forwardBirths.begin(), m_forwardBirths.end(), int64_t(g.start));
        return f != m_forwardBirths.end() && *f < event;
    }

    std::map<int64_t, std::vector<const Allocation*>> m_bySize;
    std::vector<int64_t> m_forwardBirths; ///< sorted birth events of the forward's allocations
};

} // namespace

std::vector<IncomingGradient> incomingGradients(const MemoryTimeline& tl, const std::vector<AllocationClass>& classes,
                                                const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors,
                                                const std::vector<AllocationLaw>& laws)
{
    using K = RecordedTensor::Kind;
    std::set<std::vector<int64_t>> weightShapes;
    for (const auto& [event, t] : tensors)
        if (t.kind == K::Parameter || t.kind == K::Gradient)
            weightShapes.insert(t.shape);
    const KeptGradients gradients(tl, classes);
    std::vector<IncomingGradient> out;
    for (size_t i = 0; i < laws.size() && i < classes.size(); ++i) {
        const Allocation& a = tl.allocations[i];
        const LawEvidence e = laws[i].evidence;
        // Kept state (a gradient, the optimizer's) was read by its category, not its size.
        if (classes[i].birthPhase != Phase::Backward || (e != LawEvidence::Size && e != LawEvidence::Mirror) ||
            !gradients.hasSize(a.size))
            continue;
        // A recorded shape outranks the size: it must be a weight's (the shapes were read first).
        if (const RecordedTensor* t = recordedTensorAt(tensors, a.start); t && !weightShapes.count(t->shape))
            continue;
        out.push_back({i, e == LawEvidence::Size && gradients.keptAt(a.size, a.start)});
    }
    return out;
}

} // namespace headroom
