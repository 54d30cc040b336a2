// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerdata.h"

#include <QString>

#include <cstdint>

namespace headroom {

struct LoadedTrace;
struct TimelineState;

/// The timeline's hover texts (rich text): an event with its action, totals (with the
/// simulated reserved bytes when there is a simulated curve), categories and top frames;
/// an allocation band with its size, category, phases, lifetime and stack.
class TimelineTooltip {
public:
    /// `state` must have a trace; its analysis may be missing (still running). Times are
    /// shown relative to the trace's first timestamp.
    explicit TimelineTooltip(const TimelineState& state);

    QString event(int64_t index) const;
    QString allocation(size_t allocation, int64_t atEvent) const;

private:
    QString timeOf(int64_t index) const;
    QString frames(uint32_t stack) const;

    const TimelineState& m_state;
    const LoadedTrace& m_trace;
    size_t m_device;
    const ExplorerData* m_data;
    int64_t m_firstTimeUs;
};

} // namespace headroom
