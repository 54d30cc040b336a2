// SPDX-License-Identifier: MIT
#include "ui/timeline/timelinetooltip.h"

#include "core/io/loader.h"
#include "core/util/units.h"
#include "ui/plot/categorystyle.h"
#include "ui/timeline/timelinecurves.h"
#include "ui/timeline/timelinestate.h"

#include <QLocale>

namespace headroom {

namespace {
constexpr size_t kTooltipFrames = 5;
}

TimelineTooltip::TimelineTooltip(const TimelineState& state)
    : m_state(state)
    , m_trace(*state.trace)
    , m_device(size_t(state.deviceIndex))
    , m_data(state.data.get())
    , m_firstTimeUs(state.curves->firstTimeUs)
{
}

QString TimelineTooltip::timeOf(int64_t index) const
{
    const TraceEvents& ev = m_trace.snapshot.devices[m_device].trace;
    if (index < 0 || size_t(index) >= ev.timeUs.size() || ev.timeUs[size_t(index)] == TraceEvents::kNoTime)
        return QString();
    return QString::fromStdString(formatDurationUs(ev.timeUs[size_t(index)] - m_firstTimeUs));
}

QString TimelineTooltip::frames(uint32_t stack) const
{
    const FrameTable& ft = m_trace.snapshot.frames;
    const std::vector<uint32_t> top = ft.topFrames(stack, kTooltipFrames);
    if (top.empty())
        return QStringLiteral("<br><i>") + QObject::tr("no Python frames recorded") + QStringLiteral("</i>");
    QString html = QStringLiteral("<br><i>") + QObject::tr("top frames:") + QStringLiteral("</i>");
    for (uint32_t f : top) {
        QString text = QString::fromStdString(ft.formatFrame(f));
        if (text.size() > 110)
            text = QStringLiteral("\u2026") + text.right(109);
        html += QStringLiteral("<br>&nbsp;&nbsp;") + text.toHtmlEscaped();
    }
    return html;
}

QString TimelineTooltip::event(int64_t index) const
{
    const DeviceData& dev = m_trace.snapshot.devices[m_device];
    const MemoryTimeline& tl = m_trace.timelines[m_device];
    if (index < 0 || size_t(index) >= dev.trace.count())
        return QString();
    const TraceEvents& ev = dev.trace;
    const size_t i = size_t(index);
    QString html = QStringLiteral("<p style='white-space:pre'><b>") + QObject::tr("Event %1").arg(index) + QStringLiteral("</b>");
    const QString time = timeOf(index);
    if (!time.isEmpty())
        html += QStringLiteral(" \u00B7 ") + QObject::tr("at %1").arg(time);
    if (m_data && i < m_data->analysis.phases.eventPhase.size())
        html += QStringLiteral(" \u00B7 ") + phaseDisplayName(m_data->analysis.phases.eventPhase[i]);
    html += QStringLiteral("<br>") + QString::fromLatin1(actionName(ev.action[i]));
    if (ev.size[i] != 0)
        html += QLatin1Char(' ') + formatBytesQ(ev.size[i]);
    if (ev.addr[i] != 0)
        html += QStringLiteral(" at 0x") + QString::number(ev.addr[i], 16);
    html += QStringLiteral("<br>") + QObject::tr("allocated: %1 \u00B7 reserved: %2")
                                         .arg(formatBytesQ(tl.allocated[i]), formatBytesQ(tl.reserved[i]));
    if (const int64_t simulated = m_state.simulatedReservedAt(index); simulated >= 0)
        html += QStringLiteral("<br>")
              + QObject::tr("%1: %2").arg(m_state.simulatedLabel.toHtmlEscaped(), formatBytesQ(simulated));
    if (const int64_t projected = m_state.projectedAt(index); projected >= 0)
        html += QStringLiteral("<br>")
              + QObject::tr("%1: %2 allocated").arg(m_state.projectedLabel.toHtmlEscaped(), formatBytesQ(projected));
    if (m_data) {
        const GroupedSeries::Values v = m_data->analysis.categories.valueAt(index);
        for (TensorCategory c : categoryStackOrder()) {
            if (v[size_t(c)] <= 0)
                continue;
            html += QStringLiteral("<br>&nbsp;&nbsp;<span style='color:%1'>\u25A0</span> %2: %3")
                        .arg(categoryColor(c).name(), categoryDisplayName(c), formatBytesQ(v[size_t(c)]));
        }
    }
    return html + frames(ev.stack[i]) + QStringLiteral("</p>");
}

QString TimelineTooltip::allocation(size_t index, int64_t atEvent) const
{
    const MemoryTimeline& tl = m_trace.timelines[m_device];
    if (index >= tl.allocations.size())
        return QString();
    const Allocation& a = tl.allocations[index];
    QString html = QStringLiteral("<p style='white-space:pre'><b>") +
                   QObject::tr("Allocation of %1").arg(formatBytesQ(a.size)) + QStringLiteral("</b> at 0x") +
                   QString::number(a.addr, 16);
    if (m_data && index < m_data->analysis.classes.size()) {
        const AllocationClass& c = m_data->analysis.classes[index];
        html += QStringLiteral("<br><span style='color:%1'>\u25A0</span> %2 \u00B7 ")
                    .arg(categoryColor(c.category).name(), categoryDisplayName(c.category)) +
                QObject::tr("born in %1").arg(phaseDisplayName(c.birthPhase));
    }
    auto when = [&](int64_t e) {
        const QString t = timeOf(e);
        return t.isEmpty() ? QObject::tr("event %1").arg(QLocale().toString(qlonglong(e)))
                           : QObject::tr("event %1 (%2)").arg(QLocale().toString(qlonglong(e)), t);
    };
    const QString born = a.start == Allocation::kBeforeWindow ? QObject::tr("before the trace began") : when(a.start);
    const QString freed = a.end == Allocation::kStillAlive ? QObject::tr("still alive at the end") : when(a.end);
    html += QStringLiteral("<br>") + QObject::tr("allocated %1, freed %2").arg(born, freed);
    if (a.start != Allocation::kBeforeWindow && a.end != Allocation::kStillAlive)
        html += QStringLiteral("<br>") + QObject::tr("lifetime: %1 events").arg(QLocale().toString(qlonglong(a.end - a.start)));
    if (atEvent >= 0)
        html += QStringLiteral("<br><i>") + QObject::tr("at event %1; click to select it").arg(atEvent) + QStringLiteral("</i>");
    return html + frames(a.stack) + QStringLiteral("</p>");
}

} // namespace headroom
