// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorerdata.h"

#include <QString>

#include <cstdint>

namespace headroom {

struct LoadedTrace;

/// The timeline's hover texts (rich text): an event with its action, totals, categories
/// and top frames; an allocation band with its size, category, phases, lifetime and stack.
class TimelineTooltip {
public:
    /// `data` may be null (the analysis is still running); `firstTimeUs` is the trace's
    /// first timestamp (times are shown relative to it).
    TimelineTooltip(const LoadedTrace& trace, size_t deviceIndex, const ExplorerData* data, int64_t firstTimeUs);

    QString event(int64_t index) const;
    QString allocation(size_t allocation, int64_t atEvent) const;

private:
    QString timeOf(int64_t index) const;
    QString frames(uint32_t stack) const;

    const LoadedTrace& m_trace;
    size_t m_device;
    const ExplorerData* m_data;
    int64_t m_firstTimeUs;
};

} // namespace headroom
