// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/projection/whatifprojection.h"

#include <QColor>
#include <QWidget>

#include <string>

namespace headroom {

/// The what-if panel's chart: stacked bars of the projection's components per phase, the
/// measured run (calibrated mode) beside the projection, the capacity line and the
/// uncertainty band of the projected peak, with a legend of the components.
class WhatIfChart : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfChart(QWidget* parent = nullptr);
    /// `measured` may be null (analytic mode): the model's steady state at the measured setting.
    /// `iteration` >= 0: the calibration's iteration, whose own allocated bytes (each phase's
    /// `measured`) are marked on that bar, "measured (iteration N)".
    void set(const Projection* measured, const Projection& projected, int iteration = -1);

    static QColor componentColor(const std::string& name);
    /// A component's name as the legend and the tables write it: "activations linear", "KV cache".
    static QString componentLabel(const std::string& name);

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    bool m_hasMeasured = false;
    int m_iteration = -1;
    Projection m_measured, m_projected;
};

} // namespace headroom
