// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/tensorcategory.h"

#include <QRectF>
#include <QString>

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

class QColor;
class QCustomPlot;
class QCPAbstractLegendItem;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPItemTracer;
class QCPRange;
class QCPTextElement;
class QFont;
class QPalette;

namespace headroom {

struct DeviceAnalysis;

/// What TimelineView puts on its QCustomPlot besides the drawing layers: the allocated,
/// reserved, simulated reserved and stack-filter curves, one legend entry per tensor category (the areas are
/// drawn by CategoryAreaLayer), the axes and the header row (title left, legend right),
/// the peak marker, the device-capacity line, the OOM markers and the empty-state text.
/// It builds them, colours them from the palette, keeps the legend in step with the
/// categories present and shown, and turns labels away from the plot's edges. The plot
/// owns the QCP objects; this class holds them and knows how they are set up.
class TimelinePlotItems {
public:
    /// Builds everything on `plot`; `font` is the view's (the title, labels and empty
    /// text are sized from it).
    TimelinePlotItems(QCustomPlot* plot, const QFont& font);

    QCPGraph* allocated() const { return m_allocated; }
    QCPGraph* reserved() const { return m_reserved; }
    QCPGraph* filtered() const { return m_filtered; }
    QCPGraph* simulatedReserved() const { return m_simulated; }
    /// Names the simulated reserved curve in the legend; empty: no simulated curve, no
    /// legend entry (updateLegend puts the entry after the recorded reserved).
    void setSimulatedReserved(const QString& label);
    /// The filter curve's legend entry ("in module blocks.0"); empty: none.
    void setFilterLabel(const QString& label);

    /// Whether a category's area is drawn: present in the data and not toggled off.
    bool categoryDrawn(TensorCategory c) const
    {
        return m_categoryPresent[size_t(c)] && m_categoryShown[size_t(c)];
    }
    bool categoryShown(TensorCategory c) const { return m_categoryShown[size_t(c)]; }
    /// Only the flag: updateLegend shows it.
    void setCategoryShown(TensorCategory c, bool shown) { m_categoryShown[size_t(c)] = shown; }
    /// The category a legend item stands for; none for the totals.
    std::optional<TensorCategory> legendCategory(QCPAbstractLegendItem* item) const;
    /// Marks the categories of `analysis` present (none when null), lists them in the
    /// legend, dims the hidden ones and styles the allocated curve: a line on top of the
    /// categories, else the filled total (by allocation) or the outline of the area layer's
    /// fill (by category). Returns whether any category is present.
    /// `reservedRecorded`: MemoryTimeline::reservedRecorded; false leaves the recorded reserved
    /// curve out of the legend (a CPU recording has none; the simulated one stands in).
    bool updateLegend(const DeviceAnalysis* analysis, bool byCategory, const QPalette& palette,
                      bool reservedRecorded = true);
    /// Background, axes, grid, texts and label backgrounds (not the legend's dimming:
    /// updateLegend).
    void applyPalette(const QPalette& palette);

    void setTitle(const QString& title);
    void setEmptyText(const QString& text);
    /// With events: the peak marker and x ticks; without: the empty-state text.
    void setHasEvents(bool haveEvents);
    /// Whole-number x ticks (event indices) or the default ticker (time).
    void setEventIndexTicks(bool eventIndex);
    void setPeak(double key, int64_t bytes, const QString& label);
    /// The dotted capacity line and its label; hidden when `bytes` <= 0.
    void setCapacity(int64_t bytes, const QString& label);
    /// The capacity line's label as drawn (empty while hidden).
    QString capacityLabel() const;
    void clearOomMarkers();
    /// A dashed line at `key` with its label, the labels staggered over five rows.
    void addOomMarker(double key, const QString& label, const QFont& font, const QColor& background);
    /// Turns the peak and OOM labels inwards near the edges of the visible range.
    void updateLabelAlignment(const QCPRange& range);
    /// Places the OOM labels under the phase names' strip, the capacity label above its line
    /// (else under it) and the peak's label where it is clear of them all. Run after each
    /// layout, when the pixel positions are known.
    void placeLabels();
    /// Sets the legend's columns to what fits beside the title; true when they changed (the
    /// plot must be laid out again).
    bool fitLegend();
    /// The marker labels drawn (peak, capacity, OOMs) and where, in the plot's pixels, and the
    /// phase names' strip: what must not collide (a GUI test checks it).
    std::vector<std::pair<QString, QRectF>> markerLabels() const;
    QRectF phaseStrip() const;
    const QCPTextElement* title() const { return m_title; }

private:
    struct OomMarker {
        QCPItemStraightLine* line = nullptr;
        QCPItemText* label = nullptr;
        double key = 0;
    };

    QCustomPlot* m_plot;
    QCPGraph* m_allocated;
    QCPGraph* m_reserved;
    QCPGraph* m_filtered;
    QCPGraph* m_simulated;
    /// By stack position; legend entries only (the areas are drawn by CategoryAreaLayer).
    std::array<QCPGraph*, kTensorCategoryCount> m_categoryGraphs{};
    std::array<bool, kTensorCategoryCount> m_categoryShown{};   ///< by category
    std::array<bool, kTensorCategoryCount> m_categoryPresent{}; ///< by category
    QCPItemTracer* m_peakTracer;
    QCPItemText* m_peakLabel;
    QCPItemText* m_emptyText;
    QCPItemStraightLine* m_capacityLine;
    QCPItemText* m_capacityLabel;
    QCPTextElement* m_title;
    std::vector<OomMarker> m_ooms;
    double m_peakKey = 0;
    Qt::Alignment m_peakAlign = Qt::AlignHCenter; ///< updateLabelAlignment's, for placePeakLabel
};

} // namespace headroom
