// SPDX-License-Identifier: MIT
#pragma once

#include <QPixmap>
#include <QWidget>

#include <vector>

namespace headroom {

/// A thin overview of the whole run under the timeline: the allocated curve (every
/// bucket's maximum), the peak, and the part the timeline shows as a frame. Click or drag
/// to move the view there, drag the frame's edges to resize it, the wheel zooms; Home
/// (or a double click) shows the whole run.
class TimelineMinimap : public QWidget {
    Q_OBJECT
public:
    explicit TimelineMinimap(QWidget* parent = nullptr);

    /// The whole run: sample keys (x, ascending) and the allocated bytes there.
    void setCurve(std::vector<double> keys, std::vector<double> values, double lower, double upper);
    void clear();
    /// The range the timeline shows (x keys).
    void setVisibleRange(double lower, double upper);
    double visibleLower() const { return m_visLower; }
    double visibleUpper() const { return m_visUpper; }

    QSize sizeHint() const override { return {400, 44}; }
    QSize minimumSizeHint() const override { return {100, 30}; }

signals:
    /// The user asked the timeline to show [lower, upper].
    void rangeRequested(double lower, double upper);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;

private:
    enum class Drag { None, Move, Left, Right };
    double xOf(double key) const;
    double keyAt(double x) const;
    void request(double lower, double upper);

    void renderCurve();

    std::vector<double> m_keys, m_values;
    QColor m_curveBackground;
    QPixmap m_curve; ///< the run's curve at the widget's size (repainting it on every pan cost a frame)
    double m_lower = 0, m_upper = 1;       ///< the whole run
    double m_visLower = 0, m_visUpper = 1; ///< the timeline's range
    double m_maxValue = 0;
    Drag m_drag = Drag::None;
    double m_grabOffset = 0;
};

} // namespace headroom
