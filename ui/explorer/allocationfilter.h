// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/moduleof.h"
#include "ui/explorer/explorerdata.h"
#include "ui/explorer/selection.h"

#include <QString>

#include <functional>

namespace headroom {

/// The allocations the selection's filters keep: under the stack view's frame path and in
/// the module view's module. One predicate for the timeline's curve, the allocations table
/// and the stacks, so that the three always show the same allocations.
class AllocationFilter {
public:
    AllocationFilter(const ExplorerData& data, const SelectionState& state);

    bool active() const { return m_byStack || m_byModule; }
    bool keeps(size_t allocation) const;
    /// keeps() as a function; null when no filter is set (every allocation passes).
    std::function<bool(size_t)> predicate() const;
    /// ", under model.py:12:forward, in module blocks.0.attn"; empty without a filter.
    QString description() const;

private:
    const ExplorerData& m_data;
    const SelectionState& m_state;
    bool m_byStack = false, m_byModule = false;
    mutable ModuleResolver m_moduleOf;
};

} // namespace headroom
