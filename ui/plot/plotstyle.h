// SPDX-License-Identifier: MIT
#pragma once

class QColor;
class QCPAxis;
class QPen;

namespace headroom {

/// Colours one QCustomPlot axis from the palette's text colour: its base line, ticks,
/// tick labels and label, and its grid with `gridPen`. Shared by the plots that follow
/// the theme (timeline, breakdown).
void applyAxisColors(QCPAxis* axis, const QColor& text, const QPen& gridPen);

} // namespace headroom
