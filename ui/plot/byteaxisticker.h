// SPDX-License-Identifier: MIT
#pragma once

#include <qcustomplot.h>

namespace headroom {

/// Y-axis ticks for byte counts: steps are powers of two times a binary unit
/// (512 MiB, 1 GiB, 2 GiB, 4 GiB ...) and labels read "12 GiB" or "1.5 MiB".
class ByteAxisTicker : public QCPAxisTicker {
public:
    ByteAxisTicker();

    /// The label for `bytes` on an axis whose largest magnitude is `axisMax` (that picks
    /// the unit) and whose ticks are `step` apart (that picks the decimals).
    static QString formatTick(double bytes, double step, double axisMax);

protected:
    double getTickStep(const QCPRange& range) override;
    int getSubTickCount(double tickStep) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;

private:
    double m_lastStep = 1.0;
    double m_axisMax = 1.0;
};

} // namespace headroom
