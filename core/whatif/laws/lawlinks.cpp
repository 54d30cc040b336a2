// SPDX-License-Identifier: MIT
#include "core/whatif/laws/lawlinks.h"

#include <algorithm>
#include <numeric>

namespace headroom {

namespace {

/// Union-find over allocation indices, path halving.
class Classes {
public:
    explicit Classes(size_t n) : m_parent(n) { std::iota(m_parent.begin(), m_parent.end(), size_t(0)); }
    size_t root(size_t i)
    {
        while (m_parent[i] != i)
            i = m_parent[i] = m_parent[m_parent[i]];
        return i;
    }
    void join(size_t a, size_t b) { m_parent[root(a)] = root(b); }

private:
    std::vector<size_t> m_parent;
};

/// What a size alone allows: every law whose unit it is a multiple of.
uint8_t sizeAllows(int64_t z, int b0, int s0)
{
    const int64_t tokens = int64_t(b0) * s0;
    uint8_t m = lawBit(SizeLaw::Constant);
    const std::pair<SizeLaw, int64_t> units[] = {{SizeLaw::Batch, b0},
                                                 {SizeLaw::Sequence, s0},
                                                 {SizeLaw::Tokens, tokens},
                                                 {SizeLaw::TokensBySeq, tokens * s0},
                                                 {SizeLaw::SeqSquared, int64_t(s0) * s0}};
    for (const auto& [law, unit] : units)
        if (fitsUnit(z, unit))
            m |= lawBit(law);
    return m;
}

/// Allocation index made at each event, sorted by event.
std::vector<std::pair<int64_t, size_t>> allocationsByEvent(const std::vector<Allocation>& allocations)
{
    std::vector<std::pair<int64_t, size_t>> out;
    out.reserve(allocations.size());
    for (size_t i = 0; i < allocations.size(); ++i)
        if (allocations[i].start >= 0)
            out.emplace_back(allocations[i].start, i);
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

std::vector<std::vector<size_t>> likeClasses(const std::vector<Allocation>& allocations,
                                             const std::vector<std::pair<uint32_t, RecordedTensor>>& tensors)
{
    const auto byEvent = allocationsByEvent(allocations);
    auto at = [&](int64_t event) -> int64_t {
        const auto it = std::lower_bound(byEvent.begin(), byEvent.end(), std::pair<int64_t, size_t>{event, 0});
        return it != byEvent.end() && it->first == event ? int64_t(it->second) : -1;
    };
    Classes classes(allocations.size());
    std::vector<uint8_t> linked(allocations.size(), 0);
    for (const auto& [event, t] : tensors) {
        if (t.like.empty())
            continue;
        const int64_t i = at(event);
        for (uint32_t back : t.like) {
            const int64_t j = back <= event ? at(int64_t(event) - back) : -1;
            if (i < 0 || j < 0)
                continue;
            classes.join(size_t(i), size_t(j));
            linked[size_t(i)] = linked[size_t(j)] = 1;
        }
    }
    std::vector<std::vector<size_t>> out;
    std::vector<int64_t> slot(allocations.size(), -1);
    for (size_t i = 0; i < allocations.size(); ++i) {
        if (!linked[i])
            continue;
        int64_t& s = slot[classes.root(i)];
        if (s < 0) {
            s = int64_t(out.size());
            out.emplace_back();
        }
        out[size_t(s)].push_back(i);
    }
    return out;
}

std::optional<ClassReading> classReading(const std::vector<size_t>& members, const std::vector<AllocationLaw>& laws,
                                         const std::vector<Allocation>& allocations, int b0, int s0)
{
    uint8_t allowed = 0xff;
    const bool offset = laws[members.front()].offset;
    LawEvidence best = LawEvidence::Size;
    std::optional<SizeLaw> central;
    bool agree = true;
    for (size_t i : members) {
        const AllocationLaw& law = laws[i];
        const bool weak = !law.offset && (law.evidence == LawEvidence::Size || law.evidence == LawEvidence::Mirror);
        const uint8_t mine = weak ? uint8_t(law.allowed | sizeAllows(allocations[i].size, b0, s0)) : law.allowed;
        allowed = law.offset == offset ? uint8_t(allowed & mine) : uint8_t(0);
        if (!central || law.evidence < best) {
            best = law.evidence;
            central = law.central;
            agree = true;
        } else if (law.evidence == best && law.central != *central) {
            agree = false;
        }
    }
    if (!allowed || !agree || !central || !(allowed & lawBit(*central)))
        return std::nullopt;
    return ClassReading{*central, allowed};
}

} // namespace headroom
