// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// What the user has selected, shared by every view. Events are indices into the
/// device's trace; -1 is the state before the first event.
struct SelectionState {
    static constexpr int64_t kNone = INT64_MIN;

    int device = -1;              ///< index into snapshot.devices
    int64_t event = kNone;        ///< the event whose state the views show
    int64_t rangeFirst = kNone;   ///< inclusive; kNone: no range
    int64_t rangeLast = kNone;    ///< inclusive
    int64_t allocation = -1;      ///< index into MemoryTimeline::allocations
    std::vector<uint32_t> stackFilter; ///< frame ids, outermost first; empty: no filter
    /// The stacks show their Python frames only (where a stack has any): the user's code
    /// first, the C++ between and below it a click away. The stack filter is in these terms.
    bool pythonOnly = true;
    /// The module the views are filtered to (core/analysis/moduleof.h: ModuleOf::key() or
    /// kOutsideModulesKey); empty: none. `moduleLabel` is how the module view names it.
    std::string moduleFilter;
    std::string moduleLabel;

    bool hasEvent() const { return event != kNone; }
    bool hasRange() const { return rangeFirst != kNone; }
};

/// The one selection object the views share (hotspot's FilterAndZoomStack, massif's
/// selectItem): views call the setters for what the user did and react to `changed`.
/// The composition root forwards `changed` to every view, so views never connect to
/// each other. Setters that change nothing emit nothing.
class Selection : public QObject {
    Q_OBJECT
public:
    enum Field {
        Device = 1,
        Event = 2,
        Range = 4,
        Allocation = 8,
        StackFilter = 16,
        ModuleFilter = 32,
        All = 63,
        /// Either filter: what the views that keep some allocations react to.
        Filters = StackFilter | ModuleFilter,
    };
    Q_DECLARE_FLAGS(Fields, Field)

    explicit Selection(QObject* parent = nullptr);

    const SelectionState& state() const { return m_state; }

    /// A new device or file: everything else is cleared, the event set to `event`.
    void reset(int device, int64_t event);
    void setEvent(int64_t event);
    void setRange(int64_t first, int64_t last);
    void clearRange();
    /// -1 clears it. The event stays: the table listing live allocations keeps its rows.
    void setAllocation(int64_t allocation);
    void setStackFilter(std::vector<uint32_t> frames);
    /// Filters the views to one module's allocations; an empty key clears it.
    void setModuleFilter(std::string key, std::string label);
    /// Python frames only, or every frame; clears the stack filter (its path is in the other terms).
    void setPythonOnly(bool pythonOnly);

signals:
    void changed(const headroom::SelectionState& state, headroom::Selection::Fields fields);

private:
    void emitChanged(Fields fields);

    SelectionState m_state;
};

} // namespace headroom

Q_DECLARE_OPERATORS_FOR_FLAGS(headroom::Selection::Fields)
