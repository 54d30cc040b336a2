// SPDX-License-Identifier: MIT
#include "ui/explorer/allocationfilter.h"

#include "core/analysis/moduleof.h"

namespace headroom {

AllocationFilter::AllocationFilter(const ExplorerData& data, const SelectionState& state)
    : m_data(data)
    , m_state(state)
    , m_byStack(!state.stackFilter.empty())
    , m_byModule(!state.moduleFilter.empty())
    , m_moduleOf(data.frames(), data.device().trace)
{
}

bool AllocationFilter::keeps(size_t allocation) const
{
    const Allocation& a = m_data.timeline().allocations[allocation];
    const FrameTable& ft = m_data.frames();
    if (m_byStack && !stackStartsWith(ft, a.stack, m_state.stackFilter, m_state.pythonOnly))
        return false;
    if (!m_byModule)
        return true;
    return moduleUnder(m_moduleOf(a.start, a.stack), m_state.moduleFilter);
}

std::function<bool(size_t)> AllocationFilter::predicate() const
{
    if (!active())
        return nullptr;
    return [this](size_t i) { return keeps(i); };
}

QString AllocationFilter::description() const
{
    QString out;
    if (m_byStack)
        out += QObject::tr(", under %1").arg(QString::fromStdString(m_data.frames().formatFrame(m_state.stackFilter.back())));
    if (m_byModule)
        out += QObject::tr(", in module %1").arg(QString::fromStdString(m_state.moduleLabel));
    return out;
}

} // namespace headroom
