// SPDX-License-Identifier: MIT
#include "core/whatif/laws/sizelaw.h"

#include "core/replay/allocatorconstants.h"

#include <algorithm>
#include <cmath>

namespace headroom {

LawExponents lawExponents(SizeLaw l)
{
    switch (l) {
    case SizeLaw::Constant: return {0, 0};
    case SizeLaw::Batch: return {1, 0};
    case SizeLaw::Sequence: return {0, 1};
    case SizeLaw::Tokens: return {1, 1};
    case SizeLaw::TokensBySeq: return {1, 2};
    case SizeLaw::SeqSquared: return {0, 2};
    case SizeLaw::StepBlock: return {1, 1};
    }
    return {};
}

double lawFactor(SizeLaw l, double rb, double rs)
{
    if (l == SizeLaw::StepBlock)
        return rs * std::max(1.0, rb / 2);
    const LawExponents e = lawExponents(l);
    return std::pow(rb, e.batch) * std::pow(rs, e.seq);
}

std::string_view sizeLawName(SizeLaw l)
{
    switch (l) {
    case SizeLaw::Constant: return "constant";
    case SizeLaw::Batch: return "b";
    case SizeLaw::Sequence: return "s";
    case SizeLaw::Tokens: return "b*s";
    case SizeLaw::TokensBySeq: return "b*s^2";
    case SizeLaw::SeqSquared: return "s^2";
    case SizeLaw::StepBlock: return "s*max(1,b/2)";
    }
    return "?";
}

std::string sizeLawName(SizeLaw l, int offset)
{
    std::string name(sizeLawName(l));
    if (offset <= 0 || lawExponents(l).seq == 0)
        return name;
    const size_t at = name.find('s');
    return name.replace(at, 1, "(s+" + std::to_string(offset) + ")");
}

bool fitsUnit(int64_t size, int64_t unit)
{
    return unit > 0 && size >= unit && size % unit < allocator::kMinBlock;
}

std::string_view lawEvidenceName(LawEvidence e)
{
    switch (e) {
    case LawEvidence::Shape: return "shape";
    case LawEvidence::Runs: return "runs";
    case LawEvidence::Category: return "category";
    case LawEvidence::Stack: return "stack";
    case LawEvidence::Steps: return "steps";
    case LawEvidence::Cast: return "cast";
    case LawEvidence::Gradient: return "gradient";
    case LawEvidence::Mirror: return "mirror";
    case LawEvidence::Op: return "op";
    case LawEvidence::Size: return "size";
    }
    return "?";
}

} // namespace headroom
