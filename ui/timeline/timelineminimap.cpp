// SPDX-License-Identifier: MIT
#include "ui/timeline/timelineminimap.h"

#include "ui/timeline/timelinestyle.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {
constexpr int kMargin = 2;
constexpr double kEdgeGrabPx = 5;
} // namespace

TimelineMinimap::TimelineMinimap(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setFixedHeight(44);
    setToolTip(tr("The whole run: click or drag to move the view, drag the frame's edges to resize it, "
                  "the wheel zooms, a double click shows everything"));
}

void TimelineMinimap::setCurve(std::vector<double> keys, std::vector<double> values, double lower, double upper)
{
    m_keys = std::move(keys);
    m_values = std::move(values);
    m_lower = lower;
    m_upper = upper > lower ? upper : lower + 1;
    m_maxValue = m_values.empty() ? 0 : *std::max_element(m_values.begin(), m_values.end());
    m_curve = QPixmap();
    update();
}

void TimelineMinimap::clear()
{
    setCurve({}, {}, 0, 1);
}

void TimelineMinimap::setVisibleRange(double lower, double upper)
{
    m_visLower = lower;
    m_visUpper = upper;
    update();
}

double TimelineMinimap::xOf(double key) const
{
    const double w = std::max(1, width() - 2 * kMargin);
    return kMargin + (key - m_lower) / (m_upper - m_lower) * w;
}

double TimelineMinimap::keyAt(double x) const
{
    const double w = std::max(1, width() - 2 * kMargin);
    return m_lower + (x - kMargin) / w * (m_upper - m_lower);
}

void TimelineMinimap::request(double lower, double upper)
{
    const double span = std::min(upper - lower, m_upper - m_lower);
    if (!(span > 0))
        return;
    lower = std::clamp(lower, m_lower, m_upper - span);
    emit rangeRequested(lower, lower + span);
}

void TimelineMinimap::renderCurve()
{
    const qreal dpr = devicePixelRatioF();
    m_curve = QPixmap(size() * dpr);
    m_curve.setDevicePixelRatio(dpr);
    m_curveBackground = palette().color(QPalette::AlternateBase);
    m_curve.fill(m_curveBackground);
    if (m_keys.empty() || !(m_maxValue > 0))
        return;
    QPainter p(&m_curve);
    const double bottom = height() - kMargin, top = kMargin + 2;
    auto yOf = [&](double v) { return bottom - v / m_maxValue * (bottom - top); };
    QColor fill = timelinestyle::kAllocatedColor;
    fill.setAlpha(120);
    // One rectangle per pixel column at the column's highest sample (step-left: a sample
    // holds until the next one), so no peak is lost and no path is rasterised.
    const int w = width();
    std::vector<double> colMax(size_t(std::max(1, w)), -1);
    for (size_t i = 0; i < m_keys.size(); ++i) {
        const double x0 = xOf(m_keys[i]);
        const double x1 = i + 1 < m_keys.size() ? xOf(m_keys[i + 1]) : x0 + 1;
        for (int c = std::max(0, int(x0)); c < std::min(w, std::max(int(x0) + 1, int(x1))); ++c)
            colMax[size_t(c)] = std::max(colMax[size_t(c)], m_values[i]);
    }
    for (int c = 0; c < w; ++c)
        if (colMax[size_t(c)] > 0)
            p.fillRect(QRectF(c, yOf(colMax[size_t(c)]), 1, bottom - yOf(colMax[size_t(c)])), fill);
    const auto peak = size_t(std::max_element(m_values.begin(), m_values.end()) - m_values.begin());
    p.setPen(QPen(timelinestyle::kPeakColor, 2));
    p.drawLine(QPointF(xOf(m_keys[peak]), top - 2), QPointF(xOf(m_keys[peak]), bottom));
}

void TimelineMinimap::paintEvent(QPaintEvent*)
{
    if (m_curve.isNull() || m_curve.deviceIndependentSize().toSize() != size() ||
        m_curveBackground != palette().color(QPalette::AlternateBase)) // resized, or a theme change
        renderCurve();
    QPainter p(this);
    const QPalette pal = palette();
    p.drawPixmap(0, 0, m_curve);
    if (m_keys.empty())
        return;
    // What the timeline shows.
    const double x0 = std::clamp(xOf(m_visLower), 0.0, double(width()));
    const double x1 = std::clamp(xOf(m_visUpper), x0 + 2, double(width()));
    QColor shade = pal.color(QPalette::WindowText);
    shade.setAlpha(50);
    p.fillRect(QRectF(0, 0, x0, height()), shade);
    p.fillRect(QRectF(x1, 0, width() - x1, height()), shade);
    p.setPen(QPen(timelinestyle::kSelectionColor, 2));
    p.drawRect(QRectF(x0, 1, x1 - x0, height() - 2));
}

void TimelineMinimap::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton || m_keys.empty())
        return;
    const double x = event->position().x();
    const double x0 = xOf(m_visLower), x1 = xOf(m_visUpper);
    if (std::abs(x - x0) <= kEdgeGrabPx) {
        m_drag = Drag::Left;
    } else if (std::abs(x - x1) <= kEdgeGrabPx) {
        m_drag = Drag::Right;
    } else {
        m_drag = Drag::Move;
        const double span = m_visUpper - m_visLower;
        if (x > x0 && x < x1) {
            m_grabOffset = keyAt(x) - m_visLower;
        } else { // jump: centre the view on the click
            m_grabOffset = span / 2;
            request(keyAt(x) - span / 2, keyAt(x) + span / 2);
        }
    }
}

void TimelineMinimap::mouseMoveEvent(QMouseEvent* event)
{
    const double x = event->position().x();
    if (m_drag == Drag::None) {
        const bool edge = std::abs(x - xOf(m_visLower)) <= kEdgeGrabPx || std::abs(x - xOf(m_visUpper)) <= kEdgeGrabPx;
        setCursor(edge ? Qt::SizeHorCursor : Qt::PointingHandCursor);
        return;
    }
    const double key = keyAt(x);
    const double minSpan = (m_upper - m_lower) * 1e-6;
    switch (m_drag) {
    case Drag::Move: request(key - m_grabOffset, key - m_grabOffset + (m_visUpper - m_visLower)); break;
    case Drag::Left: emit rangeRequested(std::min(std::max(key, m_lower), m_visUpper - minSpan), m_visUpper); break;
    case Drag::Right: emit rangeRequested(m_visLower, std::max(std::min(key, m_upper), m_visLower + minSpan)); break;
    case Drag::None: break;
    }
}

void TimelineMinimap::mouseReleaseEvent(QMouseEvent*)
{
    m_drag = Drag::None;
}

void TimelineMinimap::mouseDoubleClickEvent(QMouseEvent*)
{
    emit rangeRequested(m_lower, m_upper);
}

void TimelineMinimap::wheelEvent(QWheelEvent* event)
{
    if (m_keys.empty())
        return;
    const double factor = event->angleDelta().y() > 0 ? 0.8 : 1.25;
    const double centre = keyAt(event->position().x());
    const double lower = centre - (centre - m_visLower) * factor;
    const double upper = centre + (m_visUpper - centre) * factor;
    request(std::max(lower, m_lower), std::min(upper, m_upper));
    event->accept();
}

} // namespace headroom
