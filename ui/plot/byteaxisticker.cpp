// SPDX-License-Identifier: MIT
#include "ui/plot/byteaxisticker.h"

#include "core/util/units.h"

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

constexpr const char* kBinaryUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
constexpr const char* kDecimalUnits[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};

bool binaryUnits()
{
    return byteUnits() == ByteUnits::Binary;
}

/// The largest unit (1024^k, or 1000^k with decimal units) that is at most `step`, and
/// its index.
std::pair<double, int> unitFor(double step)
{
    const double base = binaryUnits() ? 1024.0 : 1000.0;
    double unit = 1.0;
    int index = 0;
    while (index < 6 && unit * base <= step) {
        unit *= base;
        ++index;
    }
    return {unit, index};
}

/// Decimal units: steps of 1, 2 or 5 times a power of ten, the one closest to `ideal`.
double decimalStep(double ideal)
{
    const double decade = std::pow(10.0, std::floor(std::log10(ideal)));
    double best = decade;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (std::abs(std::log(m * decade / ideal)) < std::abs(std::log(best / ideal)))
            best = m * decade;
    return best;
}

} // namespace

ByteAxisTicker::ByteAxisTicker()
{
    setTickCount(6);
}

double ByteAxisTicker::getTickStep(const QCPRange& range)
{
    m_axisMax = std::max(std::abs(range.lower), std::abs(range.upper));
    const double ideal = range.size() / std::max(1, tickCount());
    if (!(ideal > 0.0) || !std::isfinite(ideal)) {
        m_lastStep = 1.0;
        return m_lastStep;
    }
    // Candidates: 2^n bytes (n >= 0); pick the one closest to the ideal step on a log
    // scale, so a 0..60 GiB range gets 8 GiB or 16 GiB steps, never 10 GiB.
    double step = binaryUnits() ? std::exp2(std::round(std::log2(ideal))) : decimalStep(ideal);
    if (step < 1.0)
        step = 1.0;
    m_lastStep = step;
    return step;
}

int ByteAxisTicker::getSubTickCount(double tickStep)
{
    // Quarter steps for steps that are a multiple of four units, halves otherwise.
    const auto [unit, index] = unitFor(tickStep);
    (void)index;
    const double m = tickStep / unit;
    return std::fmod(m, 4.0) == 0.0 ? 3 : 1;
}

QString ByteAxisTicker::getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision)
{
    Q_UNUSED(locale)
    Q_UNUSED(formatChar)
    Q_UNUSED(precision)
    return formatTick(tick, m_lastStep, m_axisMax);
}

QString ByteAxisTicker::formatTick(double bytes, double step, double axisMax)
{
    if (bytes == 0.0)
        return QStringLiteral("0");
    // One unit for the whole axis, from its largest value, so a 0..3 GiB axis reads
    // "0.5 GiB", "1 GiB", "1.5 GiB" rather than mixing MiB and GiB.
    const auto [unit, index] = unitFor(std::max({std::abs(bytes), step, axisMax}));
    const double v = bytes / unit;
    // The fewest decimals that show the step exactly (0.25 GiB needs two).
    const double stepInUnit = step / unit;
    int decimals = 0;
    while (decimals < 3) {
        const double scaled = stepInUnit * std::pow(10.0, decimals);
        if (std::abs(scaled - std::round(scaled)) < 1e-6 && scaled >= 1.0 - 1e-9)
            break;
        ++decimals;
    }
    QString text = QString::number(v, 'f', decimals);
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0')))
            text.chop(1);
        if (text.endsWith(QLatin1Char('.')))
            text.chop(1);
    }
    return text + QLatin1Char(' ') + QLatin1String((binaryUnits() ? kBinaryUnits : kDecimalUnits)[index]);
}

} // namespace headroom
