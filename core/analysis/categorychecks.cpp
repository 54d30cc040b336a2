// SPDX-License-Identifier: MIT
#include "core/analysis/categorychecks.h"

#include <algorithm>

namespace headroom {

namespace {

constexpr double kOptimizerStateLimit = 3.0;
constexpr double kGradientLimit = 2.0;
/// Below this the parameters are too few to judge a ratio by (a toy model, a file cut short).
constexpr int64_t kMinParameterBytes = 1 << 20;

void checkRatio(std::vector<CategoryInvariant>& out, CategoryInvariant::Kind kind, int64_t bytes,
                int64_t parameters, double limit, int64_t event)
{
    if (bytes <= 0)
        return;
    // No parameters at all beside a category that only exists for parameters is broken too.
    const bool broken = parameters < kMinParameterBytes
                            ? parameters == 0 && bytes >= kMinParameterBytes
                            : double(bytes) > limit * double(parameters);
    if (broken)
        out.push_back({kind, bytes, parameters, parameters > 0 ? double(bytes) / double(parameters) : 0.0, limit,
                       event});
}

void checkBreakdown(std::vector<CategoryInvariant>& out, const Breakdown& b, const MemoryTimeline& tl, int64_t event)
{
    int64_t sum = 0;
    for (int64_t v : b.byCategory)
        sum += v;
    const int64_t curve = event >= 0 && size_t(event) < tl.allocated.size() ? tl.allocated[size_t(event)]
                          : event < 0 && !tl.allocated.empty()             ? tl.allocated.back()
                                                                           : sum;
    if (sum != curve)
        out.push_back({CategoryInvariant::Kind::BreakdownTotal, sum, curve, curve > 0 ? double(sum) / double(curve) : 0.0,
                       1.0, event});
}

} // namespace

std::vector<CategoryInvariant> brokenCategoryInvariants(const MemoryTimeline& tl, const DeviceAnalysis& a)
{
    std::vector<CategoryInvariant> out;
    const auto at = [](const Breakdown& b, TensorCategory c) { return b.byCategory[size_t(c)]; };
    struct Moment {
        const Breakdown* b;
        int64_t event;
    };
    for (const Moment m : {Moment{&a.atPeak, tl.peakEventIndex}, Moment{&a.atEnd, -1}}) {
        const int64_t params = at(*m.b, TensorCategory::Parameter);
        checkRatio(out, CategoryInvariant::Kind::OptimizerStateRatio, at(*m.b, TensorCategory::OptimizerState), params,
                   kOptimizerStateLimit, m.event);
        checkRatio(out, CategoryInvariant::Kind::GradientRatio, at(*m.b, TensorCategory::Gradient), params,
                   kGradientLimit, m.event);
        if (m.event >= 0)
            checkBreakdown(out, *m.b, tl, m.event);
        if (!out.empty())
            break; // the peak's reading is the one every view shows; the end only when it holds
    }
    return out;
}

bool optimizerStateSuspect(const std::vector<CategoryInvariant>& broken)
{
    return std::any_of(broken.begin(), broken.end(), [](const CategoryInvariant& i) {
        return i.kind == CategoryInvariant::Kind::OptimizerStateRatio;
    });
}

} // namespace headroom
