// SPDX-License-Identifier: MIT
#include "ui/explorer/selection.h"

#include <algorithm>

namespace headroom {

Selection::Selection(QObject* parent)
    : QObject(parent)
{
}

void Selection::reset(int device, int64_t event)
{
    const bool pythonOnly = m_state.pythonOnly; // a display choice, not part of the file
    m_state = SelectionState{};
    m_state.pythonOnly = pythonOnly;
    m_state.device = device;
    m_state.event = event;
    emitChanged(All);
}

void Selection::setEvent(int64_t event)
{
    if (event == m_state.event)
        return;
    m_state.event = event;
    emitChanged(Event);
}

void Selection::setRange(int64_t first, int64_t last)
{
    if (first > last)
        std::swap(first, last);
    if (first == m_state.rangeFirst && last == m_state.rangeLast)
        return;
    m_state.rangeFirst = first;
    m_state.rangeLast = last;
    emitChanged(Range);
}

void Selection::clearRange()
{
    if (!m_state.hasRange())
        return;
    m_state.rangeFirst = m_state.rangeLast = SelectionState::kNone;
    emitChanged(Range);
}

void Selection::setAllocation(int64_t allocation)
{
    if (allocation == m_state.allocation)
        return;
    m_state.allocation = allocation;
    emitChanged(Allocation);
}

void Selection::setStackFilter(std::vector<uint32_t> frames)
{
    if (frames == m_state.stackFilter)
        return;
    m_state.stackFilter = std::move(frames);
    emitChanged(StackFilter);
}

void Selection::setModuleFilter(std::string key, std::string label)
{
    if (key == m_state.moduleFilter)
        return;
    m_state.moduleFilter = std::move(key);
    m_state.moduleLabel = m_state.moduleFilter.empty() ? std::string() : std::move(label);
    emitChanged(ModuleFilter);
}

void Selection::setPythonOnly(bool pythonOnly)
{
    if (pythonOnly == m_state.pythonOnly)
        return;
    m_state.pythonOnly = pythonOnly;
    m_state.stackFilter.clear();
    emitChanged(StackFilter);
}

void Selection::emitChanged(Fields fields)
{
    emit changed(m_state, fields);
}

} // namespace headroom
