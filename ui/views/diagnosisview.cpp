// SPDX-License-Identifier: MIT
#include "ui/views/diagnosisview.h"

#include "core/analysis/summary.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"

#include <QLocale>
#include <QEvent>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

namespace headroom {

namespace {

QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

QString eventLink(int64_t event)
{
    return QStringLiteral("<a href=\"event:%1\">event %1</a>").arg(event);
}

/// Where the peak is: a link to its event, or words where the file names none.
QString peakPlace(const MemoryTimeline& tl)
{
    if (tl.peakEventIndex >= 0)
        return QObject::tr("at %1").arg(eventLink(tl.peakEventIndex));
    return tl.allocated.empty() ? QObject::tr("in the final state (the file holds no allocation history)")
                                : QObject::tr("before the first event");
}

QString kindTitle(const std::string& kind)
{
    if (kind == "capacity")
        return QObject::tr("Capacity");
    if (kind == "leak")
        return QObject::tr("Leak");
    if (kind == "fragmentation")
        return QObject::tr("Fragmentation");
    if (kind == "outlier_batch")
        return QObject::tr("Outlier batch");
    if (kind == "oom")
        return QObject::tr("Out of memory");
    if (kind == "imbalance")
        return QObject::tr("Imbalance across devices");
    if (kind == "categories")
        return QObject::tr("Categories that do not add up");
    if (kind == "before_recording")
        return QObject::tr("Memory from before the recording");
    return q(kind);
}

/// The failing request's own frames, the user's code first, under its OOM line.
QString oomFramesHtml(const ExplorerData& d, const OomEvent& o)
{
    const std::vector<std::string> frames = d.frames().topFrameLines(d.device().oomStack(o), kOomFrameLines);
    if (frames.empty())
        return QObject::tr("<br><i>the OOM record carries no frames</i>");
    QString html = QStringLiteral("<br><code>");
    for (const std::string& f : frames)
        html += q(f).toHtmlEscaped() + QStringLiteral("<br>");
    return html + QStringLiteral("</code>");
}

} // namespace

DiagnosisView::DiagnosisView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selection(selection)
    , m_browser(new QTextBrowser(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_browser);
    m_browser->setOpenLinks(false);
    m_rebuild = new DeferredRebuild(this, [this] { rebuild(); });
    m_rebuild->watch(m_browser->viewport()); // brought to the front: the text before it is drawn
    m_browser->setOpenExternalLinks(false);
    connect(m_browser, &QTextBrowser::anchorClicked, this, &DiagnosisView::openLink);
    rebuild();
}

DiagnosisView::~DiagnosisView() = default;

void DiagnosisView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_capacityFirstMove.clear(); // the panel's ladder is of the file before
    m_rebuild->request();
}

void DiagnosisView::ensureBuilt() const
{
    m_rebuild->ensure();
}

void DiagnosisView::render(QCPPainter* painter, const QSize& size)
{
    ensureBuilt();
    ExplorerView::render(painter, size);
}

void DiagnosisView::openLink(const QUrl& url)
{
    if (url.scheme() != QLatin1String("event") || !m_selection)
        return;
    bool ok = false;
    const qlonglong event = url.path().toLongLong(&ok);
    if (ok) {
        m_selection->clearRange();
        m_selection->setEvent(event);
    }
}

void DiagnosisView::setCapacityFirstMove(const QString& text)
{
    if (text == m_capacityFirstMove)
        return;
    m_capacityFirstMove = text;
    m_rebuild->request();
}

void DiagnosisView::rebuild()
{
    if (!m_data) {
        m_browser->setHtml(tr("<p><i>The diagnosis appears here once a file is open and analysed.</i></p>"));
        return;
    }
    const ExplorerData& d = *m_data;
    const MemoryTimeline& tl = d.timeline();
    QString html;
    html += tr("<h3>Device %1: peak %2 %3</h3>")
                .arg(d.device().device)
                .arg(formatBytesQ(tl.peakAllocated), peakPlace(tl));
    html += tr("<p>Reserved peak %1. Device capacity: %2.</p>")
                .arg(tl.reservedRecorded ? formatBytesQ(tl.peakReserved)
                                         : tr("not recorded (a CPU recording has no caching allocator; the timeline's "
                                              "Simulated reserved replays one)"),
                     d.capacity.bytes > 0 ? formatBytesQ(d.capacity.bytes) + QStringLiteral(" (") + q(d.capacity.source)
                                                + QLatin1Char(')')
                                          : tr("unknown"));
    if (d.findings.empty())
        html += tr("<p>No problem found: no OOM, no growth between iterations, little fragmentation.</p>");
    for (const Finding& f : d.findings) {
        html += QStringLiteral("<h4>") + kindTitle(f.kind).toHtmlEscaped() + QStringLiteral("</h4>");
        html += QStringLiteral("<p><b>") + q(f.verdict).toHtmlEscaped() + QStringLiteral("</b></p>");
        html += QStringLiteral("<p>") + tr("Evidence: ") + q(f.evidence).toHtmlEscaped() + QStringLiteral("</p>");
        const QString move = f.kind == "capacity" && !m_capacityFirstMove.isEmpty() ? m_capacityFirstMove : q(f.firstMove);
        html += QStringLiteral("<p>") + tr("First move: ") + move.toHtmlEscaped() + QStringLiteral("</p>");
    }
    if (!d.device().ooms.empty()) {
        html += tr("<h4>OOM events</h4><ul>");
        for (const OomEvent& o : d.device().ooms) {
            html += tr("<li>%1: requested %2 with %3 free on the device")
                        .arg(eventLink(o.eventIndex), formatBytesQ(o.size), formatBytesQ(o.deviceFree));
            html += oomFramesHtml(d, o) + QStringLiteral("</li>");
        }
        html += QStringLiteral("</ul>");
    }
    if (!d.analysis.iterationPeaks.empty()) {
        html += tr("<h4>Iterations (%1)</h4>").arg(q(d.analysis.phases.iterationSource).toHtmlEscaped());
        html += tr("<table cellpadding=3><tr><th align=left>iteration</th><th align=right>peak</th>"
                   "<th align=left>at</th><th align=right>after it</th></tr>");
        size_t shown = 0;
        for (const IterationPeak& it : d.analysis.iterationPeaks) {
            if (++shown > 50) {
                html += tr("<tr><td colspan=4>\u2026 %1 more</td></tr>").arg(d.analysis.iterationPeaks.size() - 50);
                break;
            }
            html += QStringLiteral("<tr><td>%1</td><td align=right>%2</td><td>%3</td><td align=right>%4</td></tr>")
                        .arg(it.iteration)
                        .arg(formatBytesQ(it.peakBytes), it.peakEvent >= 0 ? eventLink(it.peakEvent) : QString(),
                             formatBytesQ(it.endBytes));
        }
        html += QStringLiteral("</table>");
    }
    const Fragmentation& fr = d.analysis.fragmentation;
    if (!tl.reservedRecorded) {
        html += tr("<h4>Allocator at the end</h4><p>Not recorded: a CPU recording holds tensors, not a caching "
                   "allocator's segments.</p>");
        m_browser->setHtml(html);
        return;
    }
    html += tr("<h4>Allocator at the end</h4><p>Reserved %1, allocated %2; rounding waste %3, cached free %4 in %5 "
               "blocks (largest %6), pending free %7.</p>")
                .arg(formatBytesQ(fr.reserved), formatBytesQ(fr.allocated), formatBytesQ(fr.internalBytes),
                     formatBytesQ(fr.inactiveBytes), QLocale().toString(qlonglong(fr.inactiveBlocks)),
                     formatBytesQ(fr.largestFreeBlock), formatBytesQ(fr.pendingFreeBytes));
    m_browser->setHtml(html);
}

void DiagnosisView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && m_rebuild)
        m_rebuild->request();
}

} // namespace headroom
