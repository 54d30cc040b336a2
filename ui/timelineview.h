// SPDX-License-Identifier: MIT
#pragma once

#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPItemTracer;
class QCPItemText;
class QCPItemStraightLine;
class QCPTextElement;
class QCPRange;
class QMouseEvent;

namespace headroom {

struct LoadedTrace;
struct DeviceData;
struct MemoryTimeline;

/// The memory-over-time chart of one device: allocated bytes (filled) and reserved
/// bytes (outline), the peak and the OOM events marked. Only the visible x-range is
/// drawn, reduced with downsampleMinMax to about two points per pixel, so a million
/// events cost a few thousand points; the reduction runs again on every range change.
/// Holds the trace by shared pointer; the device index refers to `snapshot.devices`.
class TimelineView : public QWidget {
    Q_OBJECT
public:
    enum class XAxisMode { Time, EventIndex };
    Q_ENUM(XAxisMode)

    explicit TimelineView(QWidget* parent = nullptr);
    ~TimelineView() override;

    void setData(std::shared_ptr<const LoadedTrace> trace, int deviceIndex);
    void clearData();

    /// The preferred mode; a device without `time_us` always shows event indices.
    void setXAxisMode(XAxisMode mode);
    XAxisMode xAxisMode() const;
    bool hasTime() const;

    void zoomToFit();
    /// Renders now instead of on the next event loop pass (screenshots).
    void replotNow();

    /// The largest allocated value in the data handed to the plot (tests).
    double plottedPeakBytes() const;
    QCustomPlot* plot() const { return m_plot; }
    /// The tooltip text for event `index` (rich text).
    QString describeEvent(int64_t index) const;
    /// The event the tooltip shows for plot x-pixel `px`; -1 when none.
    int64_t eventAtPixel(double px) const;

signals:
    void xAxisModeChanged(headroom::TimelineView::XAxisMode mode);

protected:
    void changeEvent(QEvent* event) override;

private:
    struct OomMarker {
        QCPItemStraightLine* line = nullptr;
        QCPItemText* label = nullptr;
        double key = 0;
    };

    int64_t eventCount() const;
    double keyOf(int64_t event) const;
    int64_t eventAtKey(double key) const;
    void rebuild();
    void rebuildMarkers();
    void updateGraphs();
    void updateLabelAlignment();
    void onRangeChanged(const QCPRange& range);
    void onMouseMove(QMouseEvent* event);
    void applyPalette();
    QString eventTime(int64_t index) const;

    QCustomPlot* m_plot;
    QCPGraph* m_allocated;
    QCPGraph* m_reserved;
    QCPItemTracer* m_peakTracer;
    QCPItemText* m_peakLabel;
    QCPItemText* m_emptyText;
    QCPTextElement* m_title;
    std::vector<OomMarker> m_ooms;

    std::shared_ptr<const LoadedTrace> m_trace;
    const DeviceData* m_device = nullptr;
    const MemoryTimeline* m_timeline = nullptr;
    std::vector<double> m_timeKeys; ///< seconds since the first event, non-decreasing
    int64_t m_firstTimeUs = 0;
    double m_timeUnitUs = 1e6; ///< microseconds per x unit: s, ms or µs by the trace's length
    XAxisMode m_preferredMode = XAxisMode::Time;
    double m_peakKey = 0;
    bool m_inRangeChange = false;
};

} // namespace headroom
