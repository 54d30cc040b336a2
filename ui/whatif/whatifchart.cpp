// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifchart.h"

#include "core/util/units.h"
#include "ui/plot/categorystyle.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <vector>

namespace headroom {

namespace {

struct ScaleUnit {
    double bytes;
    QString name;
};

/// The scale's unit: the largest of KiB, MiB and GiB (kB, MB, GB with decimal units in the
/// preferences) the tallest bar reaches, so that a CPU recording of a few MiB reads "12 MiB",
/// not "0.0 GiB".
ScaleUnit unitFor(double top)
{
    const bool decimal = byteUnits() == ByteUnits::Decimal;
    const double k = decimal ? 1e3 : 1024.0;
    static const char* const binary[] = {"KiB", "MiB", "GiB"};
    static const char* const metric[] = {"kB", "MB", "GB"};
    int i = 2;
    double bytes = k * k * k;
    while (i > 0 && top < bytes) {
        bytes /= k;
        --i;
    }
    return {bytes, QString::fromLatin1(decimal ? metric[i] : binary[i])};
}

} // namespace

WhatIfChart::WhatIfChart(QWidget* parent)
    : QWidget(parent)
{
    setMinimumSize(300, 160); // short enough to share a laptop screen with the timeline, narrow enough for a half-window dock
}

void WhatIfChart::set(const Projection* measured, const Projection& projected, int iteration)
{
    m_hasMeasured = measured != nullptr;
    m_iteration = iteration;
    if (measured)
        m_measured = *measured;
    m_projected = projected;
    update();
}

QColor WhatIfChart::componentColor(const std::string& name)
{
    static const std::vector<std::pair<std::string, QColor>> k = {
        {"weights", QColor(0x4c, 0x72, 0xb0)},           {"master", QColor(0x64, 0x8f, 0xc8)},
        {"optimizer_state", QColor(0x8c, 0x6b, 0xb1)},   {"gradients", QColor(0xdd, 0x84, 0x52)},
        {"activations_linear", QColor(0x55, 0xa8, 0x68)}, {"activations_attention", QColor(0x2e, 0x7d, 0x32)},
        {"autocast_cache", QColor(0x9c, 0xcc, 0x65)},     {"temporaries_batch", QColor(0xc4, 0x4e, 0x52)},
        {"temporaries_param", QColor(0xe5, 0x73, 0x73)},  {"temporaries_const", QColor(0xbd, 0xbd, 0xbd)},
        {"gathered_params", QColor(0x93, 0x78, 0x60)},    {"fragmentation", QColor(0xda, 0x8b, 0xc3)},
        {"outside_allocator", QColor(0x8c, 0x8c, 0x8c)},       {"cublas_workspaces", QColor(0x00, 0x83, 0x8f)},
        {"kv_cache", QColor(0x76, 0xb7, 0xb2)},           {"engine_weights", QColor(0x2b, 0x7c, 0x74)},
        // The replay's breakdown by tensor category (peakbreakdown.h), in the same hues.
        {"parameters", QColor(0x4c, 0x72, 0xb0)},         {"activations", QColor(0x55, 0xa8, 0x68)},
        {"temporaries", QColor(0xc4, 0x4e, 0x52)},        {"inputs", QColor(0x76, 0xb7, 0xb2)},
        {"autograd_detail", QColor(0xb0, 0x9c, 0x85)},    {"autocast_copies", QColor(0x9c, 0xcc, 0x65)},
        {"unknown", QColor(0xa0, 0xa0, 0xa0)},            {"rest_of_cut_step", QColor(0xcf, 0xd8, 0xdc)},
    };
    for (const auto& [n, c] : k)
        if (n == name)
            return c;
    return Qt::gray;
}

QString WhatIfChart::componentLabel(const std::string& name)
{
    if (name == "kv_cache")
        return categoryDisplayName(TensorCategory::KvCache);
    return QString::fromStdString(name).replace(QLatin1Char('_'), QLatin1Char(' '));
}

void WhatIfChart::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().base());
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    p.setFont(small);
    const QFontMetrics fm(small);
    const int lineH = fm.height() + 1;
    // Where the replay gave the headline, the bars are its breakdown at its peak (one group);
    // the terms' phases would be another engine's numbers beside it (peakbreakdown.h).
    // A step the OOM cut short is one figure too, the whole step's: its parts, with the rest the
    // recording never reached, make the headline; the cut iteration's phases would sit under it.
    const bool replayed = m_projected.atPeakEvent >= 0;
    const bool headline = replayed || m_projected.wholeStepFromCut;
    const bool measuredShown =
        m_hasMeasured && (!headline || m_measured.atPeakEvent >= 0 || m_measured.wholeStepFromCut);
    auto parts = [&](const Projection& pr, int g) -> const std::vector<Component>& {
        return headline ? pr.atPeak : pr.phases[size_t(g)].components;
    };
    // The legend's entries: every component of either run that draws anything (the context is
    // 0 on an OOM record's own capacity), in order of first appearance.
    std::vector<std::string> legend;
    const int groups = headline ? 1 : 3, perGroup = measuredShown ? 2 : 1;
    for (const Projection* pr : {measuredShown ? &m_measured : nullptr, &m_projected})
        for (int g = 0; pr && g < groups; ++g)
            for (const auto& c : parts(*pr, g))
                if ((headline || pr->phases[size_t(g)].present) && c.bytes > 0 &&
                    std::find(legend.begin(), legend.end(), c.name) == legend.end())
                    legend.push_back(c.name);
    int legendW = 0;
    for (const auto& n : legend)
        legendW = std::max(legendW, fm.horizontalAdvance(QString::fromStdString(n)) + 18);
    // Narrow (a dock beside others): the legend goes under the bars, in as many columns as fit.
    const bool legendRight = width() >= 3 * legendW + 300;
    const int columns = legendRight ? 1 : std::max(1, (width() - 16) / std::max(1, legendW + 8));
    const int legendRows = legendRight ? 0 : int((legend.size() + size_t(columns) - 1) / size_t(columns));
    const int yAxisW = fm.horizontalAdvance(QStringLiteral("000.0")) + 10;
    const QRect area = rect().adjusted(yAxisW + 4, lineH + 2, legendRight ? -(legendW + 16) : -8,
                                       -(2 * lineH + 6 + legendRows * lineH));
    double top = m_projected.peakHigh;
    if (measuredShown)
        top = std::max(top, m_measured.peakHigh);
    for (const auto& ph : m_projected.phases) // no bar runs over the top, whichever engine
        top = std::max(top, headline ? 0.0 : ph.high);
    // A capacity far above the bars would flatten them: then it is named, not drawn to scale.
    const bool capacityOnScale = m_projected.capacity > 0 && m_projected.capacity <= 3 * top;
    if (capacityOnScale)
        top = std::max(top, m_projected.capacity);
    const ScaleUnit scale = unitFor(top);
    const double unit = scale.bytes;
    // Room above the tallest bar for its "peak" label inside the plot, below the key's row.
    const double labelRoom = std::min(0.5, double(lineH + 4) / std::max(1, area.height()));
    top = std::max({top * 1.08, top / (1.0 - labelRoom), 0.1 * unit});
    auto y = [&](double bytes) { return area.bottom() - int(bytes / top * area.height()); };
    // Axis with ticks in whole units (GiB or GB).
    p.setPen(palette().color(QPalette::Mid));
    double step = std::pow(10.0, std::floor(std::log10(top / unit))) * unit;
    if (top / step < 4)
        step /= 2;
    for (double v = 0; v <= top; v += step) {
        p.setPen(QColor(0, 0, 0, 30));
        p.drawLine(area.left(), y(v), area.right(), y(v));
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRect(0, y(v) - lineH / 2, yAxisW, lineH), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(v / unit, 'f', step < unit ? 1 : 0));
    }
    p.drawText(QRect(0, area.top() - lineH, yAxisW, lineH), Qt::AlignRight, scale.name);
    const int groupW = area.width() / groups;
    const int barW = std::max(6, std::min(56, (groupW - 16) / perGroup));
    // Bar captions in full where they fit under the bar, else their initials (the legend
    // then says what M and P stand for).
    // Both captions whole or both as letters: "steady state" cut to "teady stat" read as a word.
    const bool fullCaptions = std::max(fm.horizontalAdvance(tr("projected")), fm.horizontalAdvance(tr("steady state"))) <=
                              barW + 6;
    for (int g = 0; g < groups; ++g) {
        const int gx = area.left() + g * groupW + (groupW - perGroup * barW - (perGroup - 1) * 6) / 2;
        for (int k = 0; k < perGroup; ++k) {
            const bool measuredBar = measuredShown && k == 0;
            const Projection& pr = measuredBar ? m_measured : m_projected;
            const PhaseProjection& ph = pr.phases[size_t(g)];
            const int x = gx + k * (barW + 6);
            if (!headline && !ph.present)
                continue;
            const double low = headline ? pr.peakLow : ph.low, high = headline ? pr.peakHigh : ph.high;
            double acc = 0;
            for (const auto& c : parts(pr, g)) {
                const QRect r(x, y(acc + c.bytes), barW, y(acc) - y(acc + c.bytes));
                QColor col = componentColor(c.name);
                if (measuredBar)
                    col.setAlpha(150);
                p.fillRect(r, col);
                acc += c.bytes;
            }
            p.setPen(QPen(palette().color(QPalette::Text), 1));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRect(x, y(acc), barW, y(0) - y(acc)));
            if (!measuredBar) {
                // The band: a whisker from low to high.
                const int cx = x + barW / 2;
                p.setPen(QPen(Qt::black, 1.5));
                p.drawLine(cx, y(low), cx, y(high));
                p.drawLine(cx - 6, y(low), cx + 6, y(low));
                p.drawLine(cx - 6, y(high), cx + 6, y(high));
            }
            if (!headline && measuredBar && m_iteration >= 0 && ph.measured >= 0) {
                // What the trace itself held there: a first iteration has no optimizer state
                // yet, so it may sit well below the steady state.
                p.setPen(QPen(palette().color(QPalette::Text), 2.5));
                p.drawLine(x - 4, y(ph.measured), x + barW + 4, y(ph.measured));
            }
            if ((headline || ph.phase == pr.peakPhase) && !measuredBar) {
                p.setPen(palette().color(QPalette::Text));
                p.drawText(QRect(x - 20, y(high) - lineH - 2, barW + 40, lineH), Qt::AlignCenter, QStringLiteral("peak"));
            }
            p.setPen(palette().color(QPalette::Text));
            // The left bar is the model's steady state at the measured setting, not what the
            // trace held at that moment (a first iteration has no optimizer state yet).
            const QString caption = measuredBar ? (fullCaptions ? tr("steady state") : QStringLiteral("S"))
                                                : (fullCaptions ? tr("projected") : QStringLiteral("P"));
            p.drawText(QRect(x - 3, area.bottom() + 2, barW + 6, lineH), Qt::AlignCenter, caption);
        }
        const QString phase =
            replayed   ? tr("at the peak (replay of every allocation, event %1)").arg(m_projected.atPeakEvent)
            : headline ? tr("the whole step, which the OOM cut short")
                       : QString::fromUtf8(std::string(m_projected.phaseLabel(StepPhase(g))).c_str());
        p.drawText(QRect(area.left() + g * groupW, area.bottom() + 2 + lineH, groupW, lineH), Qt::AlignCenter,
                   fm.elidedText(phase, Qt::ElideRight, groupW - 4));
    }
    if (m_projected.capacity > 0 && !capacityOnScale) {
        p.setPen(QColor(0xd3, 0x2f, 0x2f));
        p.drawText(QRect(area.left() + 4, area.top() - lineH, area.width(), lineH), Qt::AlignLeft,
                   QStringLiteral("capacity ") + formatBytesQ(int64_t(m_projected.capacity), 1) + QStringLiteral(" (above the scale)"));
    }
    if (m_projected.capacity > 0 && capacityOnScale) {
        p.setPen(QPen(QColor(0xd3, 0x2f, 0x2f), 2, Qt::DashLine));
        const int cy = y(m_projected.capacity);
        p.drawLine(area.left(), cy, area.right(), cy);
        p.drawText(QRect(area.left() + 4, cy - lineH - 1, area.width(), lineH), Qt::AlignLeft,
                   QStringLiteral("capacity ") + formatBytesQ(int64_t(m_projected.capacity), 1));
        const double usable = m_projected.capacity * (1 - m_projected.margin);
        p.setPen(QPen(QColor(0xd3, 0x2f, 0x2f, 110), 1, Qt::DotLine));
        p.drawLine(area.left(), y(usable), area.right(), y(usable));
    }
    // Legend: beside the bars when there is room, else under them.
    QStringList key;
    if (!fullCaptions)
        key << (measuredShown ? tr("S steady state (projected at the measured setting), P projected") : tr("P projected"));
    if (!headline && m_hasMeasured && m_iteration >= 0)
        key << tr("\u2501 measured (iteration %1)").arg(m_iteration);
    if (!key.isEmpty()) {
        p.setPen(palette().color(QPalette::Text));
        QString text = key.join(QStringLiteral(" \u00b7 "));
        if (!fullCaptions && fm.horizontalAdvance(text) > area.width()) // the short key, not one cut mid-word
            text.replace(tr("S steady state (projected at the measured setting), P projected"),
                         tr("S steady state, P projected"));
        p.drawText(QRect(area.left(), area.top() - lineH, area.width(), lineH), Qt::AlignRight, text);
    }
    const int lx0 = legendRight ? area.right() + 12 : 8;
    const int ly0 = legendRight ? area.top() : area.bottom() + 2 * lineH + 6;
    for (size_t i = 0; i < legend.size(); ++i) {
        const int col = int(i) % columns, row = int(i) / columns;
        const int lx = lx0 + col * (legendW + 8), ly = ly0 + (legendRight ? int(i) : row) * lineH;
        p.fillRect(QRect(lx, ly + (lineH - 10) / 2, 10, 10), componentColor(legend[i]));
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRect(lx + 14, ly, legendW, lineH), Qt::AlignLeft | Qt::AlignVCenter,
                   componentLabel(legend[i]));
    }
}

} // namespace headroom
