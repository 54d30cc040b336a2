// SPDX-License-Identifier: MIT
#pragma once

#include "core/util/minmaxpyramid.h"
#include "ui/explorer/explorerview.h"
#include "ui/timeline/timelinestate.h"

#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPRange;

namespace headroom {

struct TimelineCurves;

struct LoadedTrace;
class TimelineOverlay;
class CategoryAreaLayer;
class AllocationBandLayer;
class TimelineMinimap;
class TimelineControls;
class TimelineInteraction;
class TimelinePlotItems;
class PoolCurveItems;
class ProjectedCurveItems;
struct ProjectedTimeline;

/// The memory-over-time chart of one device. Before the analysis arrives it shows the
/// allocated bytes (filled) and reserved bytes (outline); with it, the allocated bytes
/// stacked by tensor category (legend entries toggle categories), phase bands along the
/// top, iteration separators, the selected event, range and allocation, and the curve of
/// the allocations under the stack filter. Only the visible x-range is drawn, reduced
/// with downsampleMinMax on the total to about two points per pixel (every bucket's
/// maximum kept), so a million events cost a few thousand points.
///
/// Mouse: click selects an event, drag selects a range, the wheel zooms, right or middle
/// drag pans.
///
/// What it shows lives in one TimelineState, which the drawing layers and the mouse
/// handling read (const) and only the view writes.
class TimelineView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    enum class XAxisMode { Time, EventIndex };
    Q_ENUM(XAxisMode)
    /// By category: stacked areas per tensor category. By allocation: the largest
    /// allocations as their own bands (PyTorch's Active Memory Timeline).
    enum class Mode { ByCategory, ByAllocation };
    Q_ENUM(Mode)
    static constexpr int kDefaultBands = ExplorerData::kDefaultBands;

    explicit TimelineView(Selection* selection, QWidget* parent = nullptr);
    ~TimelineView() override;

    // ExplorerView
    QString viewId() const override { return QStringLiteral("timeline"); }
    QString viewTitle() const override { return tr("Timeline"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;
    void render(QCPPainter* painter, const QSize& size) override;

    /// The raw trace, shown at once while the analysis runs.
    void setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex);
    /// Curves the load worker prepared for `trace` (one per device): setTrace uses them
    /// instead of computing them on the GUI thread.
    void adoptPreparedCurves(const std::shared_ptr<const LoadedTrace>& trace,
                             std::vector<std::shared_ptr<const TimelineCurves>> curves);
    void clearData();

    /// The preferred mode; a device without `time_us` always shows event indices.
    void setXAxisMode(XAxisMode mode);
    XAxisMode xAxisMode() const;
    bool hasTime() const;

    /// Bookmarked events, drawn as flags with their titles.
    void setBookmarks(const std::vector<struct Bookmark>& bookmarks);
    void setMode(Mode mode);
    Mode mode() const { return m_state.byAllocation ? Mode::ByAllocation : Mode::ByCategory; }
    /// By-allocation detail: how many of the largest allocations get their own band.
    void setBandDetail(int maxBands);
    int bandDetail() const { return m_bandDetail; }
    /// The allocation whose band is under plot pixel (px, py) in by-allocation mode; -1 if none.
    int64_t allocationAtPixel(double px, double py) const;
    /// Hover text of an allocation band (rich text).
    QString describeAllocation(size_t allocation, int64_t atEvent = -1) const;

    void zoomToFit();
    /// Zooms so that events first..last fill the plot (with a little air on both sides).
    void zoomToEvents(int64_t first, int64_t last);
    /// Zooms around the middle of the visible range: factor < 1 in, > 1 out.
    void zoomBy(double factor);
    /// Pans, keeping the zoom, so that the event is in view (keyboard stepping).
    void ensureEventVisible(int64_t event);
    /// The number of events of the device shown (0 without a trace) and its peak's event
    /// (-1 when none): what keyboard navigation steps through.
    int64_t shownEventCount() const { return m_state.eventCount(); }
    int64_t peakEvent() const;
    /// Renders now instead of on the next event loop pass (screenshots).
    void replotNow();

    /// The largest allocated value in the data handed to the plot (tests).
    double plottedPeakBytes() const;
    /// The largest top-of-stack value of the category areas (tests); 0 without analysis.
    double plottedStackPeak() const;
    /// Whether a category's area is shown (legend toggle).
    bool categoryVisible(TensorCategory c) const;
    void setCategoryVisible(TensorCategory c, bool visible);
    QCustomPlot* plot() const { return m_plot; }
    TimelineMinimap* minimap() const { return m_minimap; }
    /// The tooltip text for event `index` (rich text).
    QString describeEvent(int64_t index) const;
    /// The event the tooltip shows for plot x-pixel `px`; -1 when none.
    int64_t eventAtPixel(double px) const;
    /// x pixel of an event (tests, overlay).
    double pixelOfEvent(int64_t event) const;
    /// The allocation drawn highlighted; -1 when none.
    int64_t highlightedAllocation() const { return m_state.selection.allocation; }
    /// The live bytes of the stack filter's allocations the plot holds (tests); empty: none.
    bool hasFilterCurve() const;
    /// The filtered allocations' live bytes after `event`; 0 without a filter.
    int64_t filterCurveAt(int64_t event) const;
    /// What the view shows and how events map to x keys.
    const TimelineState& state() const { return m_state; }

    /// A reserved curve from an allocator simulation (bytes after each event, indexed as
    /// the device's events), drawn dashed over the recorded one, named `label` in the
    /// legend and shown in the hover text. Replaces any simulated curve before it; an empty
    /// curve clears. Dropped when the device or trace changes.
    void setSimulatedReserved(std::vector<int64_t> curve, const QString& label);
    void clearSimulatedReserved();
    bool hasSimulatedReserved() const { return !m_state.simulatedReserved.empty(); }
    /// The simulated reserved curve's graph (tests).
    QCPGraph* simulatedReservedGraph() const;

    /// The what-if's projected run drawn over the measured timeline, named `label` in the
    /// legend and the hover text; null clears. Dropped when the device or trace changes.
    void setProjected(std::shared_ptr<const ProjectedTimeline> projection, const QString& label);
    void clearProjected() { setProjected(nullptr, QString()); }
    bool hasProjected() const { return m_state.projected != nullptr; }
    /// The projected curve's items (tests).
    const ProjectedCurveItems& projectedItems() const { return *m_projected; }
    const PoolCurveItems& poolItems() const { return *m_pools; }
    const TimelinePlotItems& plotItems() const { return *m_items; }

signals:
    void xAxisModeChanged(headroom::TimelineView::XAxisMode mode);
    void modeChanged(headroom::TimelineView::Mode mode);
    /// A simulated reserved curve was set or cleared (also by a device change).
    void simulatedReservedChanged(bool shown);

protected:
    void changeEvent(QEvent* event) override;

private:
    void updateMinimap();
    void rebuild();
    void rebuildMarkers();
    void rebuildFilterCurve();
    void updateGraphs();
    void updateLegend();
    void onRangeChanged(const QCPRange& range);
    /// The highest value the y axis must show: the measured curves, the capacity when near,
    /// the projected run's band.
    double fitTop() const;
    /// The y axis's top: fitTop() with room for the phase names and the peak's label.
    double yTop() const;
    void refitHeight();
    void applyPalette();

    /// First, so it outlives the layers and the interaction that read it.
    TimelineState m_state;
    Selection* m_selectionObject;
    QCustomPlot* m_plot;
    /// The curves, legend entries, axes and annotations (peak, capacity, OOMs, title).
    std::unique_ptr<TimelinePlotItems> m_items;
    /// The what-if's projected run over the measured curves.
    std::unique_ptr<ProjectedCurveItems> m_projected;
    std::unique_ptr<PoolCurveItems> m_pools; ///< each private pool's line
    /// Mouse clicks, drags and hover tooltips on the plot; zooming and panning.
    TimelineInteraction* m_interaction = nullptr;
    TimelineOverlay* m_overlay;
    CategoryAreaLayer* m_areas;
    AllocationBandLayer* m_bandLayer;
    TimelineMinimap* m_minimap;
    /// The mode and band-detail row above the plot.
    std::unique_ptr<TimelineControls> m_controls;
    int m_bandDetail = kDefaultBands;

    std::vector<int64_t> m_filterCurve; ///< per event; empty without a stack or module filter
    MinMaxPyramid m_filterPyramid; ///< fast downsampling of the stack filter's curve
    std::weak_ptr<const LoadedTrace> m_preparedTrace;
    std::vector<std::shared_ptr<const TimelineCurves>> m_prepared;
    bool m_inRangeChange = false;
    int m_fittedHeight = 0; ///< the axis rect height the y range was last fitted to (refitHeight)
};

} // namespace headroom
