// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>

#include <cstdint>

class QCustomPlot;
class QCPRange;
class QMouseEvent;

namespace headroom {

class AllocationBandLayer;
class Selection;
class TimelineMinimap;
struct TimelineState;

/// How the user works the timeline's QCustomPlot: a left click selects the event under
/// the pointer (and, by allocation, the band's allocation), a left drag selects a range
/// (drawn by TimelineOverlay while it lasts), a right or middle drag pans, the wheel zooms
/// horizontally (QCustomPlot's own range zoom), and hovering shows the event's or the
/// allocation band's tooltip; a click or drag on the minimap moves the view there. Also
/// the lookups behind them (which event and which allocation band lie under a pixel), the
/// zoom and pan steps of keyboard and menu navigation and the limit on zooming out.
class TimelineInteraction : public QObject {
public:
    /// Turns on the wheel zoom and listens to `plot`'s and `minimap`'s mouse signals.
    /// Reads what is shown from `state` and the band layout from `bands`; clicks and drags
    /// go to `selection` (none: nothing is selected).
    TimelineInteraction(QCustomPlot* plot, const TimelineState& state, const AllocationBandLayer& bands,
                        TimelineMinimap* minimap, Selection* selection, QObject* parent);

    /// Zooms so that events first..last fill the plot (with a little air on both sides).
    void zoomToEvents(int64_t first, int64_t last);
    /// Zooms around the middle of the visible range: factor < 1 in, > 1 out.
    void zoomBy(double factor);
    /// Pans, keeping the zoom, so that the event is in view.
    void ensureEventVisible(int64_t event);
    /// Narrows the x axis back to the whole trace (with a little air) when `range`, its new
    /// range, is wider: the wheel would shrink the trace to a line. The axis signals the
    /// change again; the caller guards against the recursion.
    void limitZoomOut(const QCPRange& range);

    /// The event the tooltip shows for plot x-pixel `px`; -1 when none.
    int64_t eventAtPixel(double px) const;
    /// The allocation whose band is under plot pixel (px, py) in by-allocation mode; -1 if none.
    int64_t allocationAtPixel(double px, double py) const;

    /// A left drag is selecting a range from pressX() to dragX() (plot pixels).
    bool rangeDragging() const { return m_drag == Drag::Range; }
    double pressX() const { return m_pressX; }
    double dragX() const { return m_dragX; }

private:
    void onMousePress(QMouseEvent* event);
    void onMouseMove(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);

    QCustomPlot* m_plot;
    const TimelineState& m_state;
    const AllocationBandLayer& m_bands;
    Selection* m_selection;
    // A left press becomes a click or a range drag; right/middle pans.
    enum class Drag { None, Pending, Range, Pan };
    Drag m_drag = Drag::None;
    double m_pressX = 0;
    double m_dragX = 0;
    double m_panLower = 0, m_panUpper = 0;
};

} // namespace headroom
