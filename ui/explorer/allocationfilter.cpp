// SPDX-License-Identifier: MIT
#include "ui/explorer/allocationfilter.h"

#include "core/analysis/moduleof.h"

namespace headroom {

AllocationFilter::AllocationFilter(const ExplorerData& data, const SelectionState& state)
    : m_data(data)
    , m_state(state)
    , m_byStack(!state.stackFilter.empty())
    , m_byModule(!state.moduleFilter.empty())
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
    auto it = m_forwardOfStack.find(a.stack);
    if (it == m_forwardOfStack.end())
        it = m_forwardOfStack.emplace(a.stack, moduleForwardFrame(ft, a.stack)).first;
    return moduleUnder(moduleOfForward(ft, m_data.device().trace, a.start, it->second), m_state.moduleFilter);
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
