// SPDX-License-Identifier: MIT
#pragma once

#include "core/util/minmaxpyramid.h"

#include <QString>
#include <QVector>

#include <cstdint>
#include <memory>

class QCustomPlot;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;

namespace headroom {

struct ProjectedTimeline;
struct TimelineState;
class TimelineSampler;

/// The what-if's projected run drawn over the measured timeline: its allocated bytes after
/// each event (a dashed line) inside the band of the readings the evidence allows (a light
/// fill), the moment its requests first fail in the allocator model (a dashed marker), or,
/// where the terms priced the projection and there is no curve, its peak as a horizontal
/// line. The plot owns the QCP objects; this class holds them.
class ProjectedCurveItems {
public:
    explicit ProjectedCurveItems(QCustomPlot* plot);

    /// Shows `projection` named `label` in the legend; null clears.
    void set(std::shared_ptr<const ProjectedTimeline> projection, const QString& label);
    const ProjectedTimeline* projection() const { return m_projection.get(); }
    bool shown() const { return m_projection != nullptr; }
    /// Samples the curve and its band for the visible range and places the OOM marker.
    void update(const TimelineSampler& sampler, const TimelineState& state, int64_t initial);
    QCPGraph* line() const { return m_line; }
    QCPItemStraightLine* oomLine() const { return m_oomLine; }
    const QString& label() const { return m_label; }

private:
    void hideAll();

    QCustomPlot* m_plot;
    QCPGraph* m_line;
    QCPGraph* m_low;
    QCPGraph* m_high;
    QCPItemStraightLine* m_peakLine;
    QCPItemStraightLine* m_oomLine;
    QCPItemText* m_oomLabel;
    std::shared_ptr<const ProjectedTimeline> m_projection;
    MinMaxPyramid m_pyramid;
    QString m_label;
};

} // namespace headroom
