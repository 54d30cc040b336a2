// SPDX-License-Identifier: MIT
#include "ui/timeline/capturebar.h"

#include "ui/explorer/backgroundjob.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QToolButton>
#include <QVBoxLayout>

namespace headroom {

namespace {

QString html(const std::string& s)
{
    return QString::fromStdString(s).toHtmlEscaped();
}

QString devicesText(const CaptureFinding& f)
{
    if (f.devices.empty())
        return {};
    QStringList ds;
    for (int d : f.devices)
        ds << QString::number(d);
    return CaptureBar::tr(" (device %1)").arg(ds.join(QStringLiteral(", ")));
}

} // namespace

CaptureBar::CaptureBar(QWidget* parent)
    : QFrame(parent)
    , m_title(new QLabel(this))
    , m_summary(new QLabel(this))
    , m_details(new QLabel(this))
    , m_detailsButton(new QToolButton(this))
    , m_job(new BackgroundJob(this))
{
    setObjectName(QStringLiteral("captureBar"));
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    QPalette pal = palette();
    // A warning amber, translucent so that it reads on light and dark palettes alike.
    pal.setColor(QPalette::Window, QColor(246, 116, 0, 50));
    setPalette(pal);

    m_title->setObjectName(QStringLiteral("captureBarTitle"));
    m_summary->setObjectName(QStringLiteral("captureBarSummary"));
    m_summary->setTextFormat(Qt::PlainText);
    // Elided to whatever width the bar has: it never sets the window's minimum width.
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_summary->setMinimumWidth(80);
    m_details->setObjectName(QStringLiteral("captureBarDetails"));
    m_details->setWordWrap(true);
    // The fixes are snippets to paste into the training script.
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    // Scrolls past a few lines: opening the details never makes the window taller.
    m_detailsArea = new QScrollArea(this);
    m_detailsArea->setObjectName(QStringLiteral("captureBarDetailsArea"));
    m_detailsArea->setWidget(m_details);
    m_detailsArea->setWidgetResizable(true);
    m_detailsArea->setFrameShape(QFrame::NoFrame);
    m_detailsArea->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_detailsArea->setMaximumHeight(9 * fontMetrics().height());
    m_detailsArea->viewport()->setAutoFillBackground(false);
    m_details->setAutoFillBackground(false);
    m_detailsArea->hide();

    m_detailsButton->setObjectName(QStringLiteral("captureBarDetailsButton"));
    m_detailsButton->setText(tr("&Details"));
    m_detailsButton->setCheckable(true);
    m_detailsButton->setToolTip(tr("Every finding and how to record a capture that avoids it"));
    auto* close = new QToolButton(this);
    close->setObjectName(QStringLiteral("captureBarClose"));
    close->setText(QStringLiteral("\u2715"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Hide until the next file"));

    auto* top = new QHBoxLayout;
    top->addWidget(m_title);
    top->addWidget(m_summary, 1);
    top->addWidget(m_detailsButton);
    top->addWidget(close);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 2, 2, 2);
    layout->setSpacing(2);
    layout->addLayout(top);
    layout->addWidget(m_detailsArea);

    connect(m_detailsButton, &QToolButton::toggled, this, &CaptureBar::showDetails);
    connect(close, &QToolButton::clicked, this, &CaptureBar::dismissed);
}

CaptureBar::~CaptureBar() = default;

void CaptureBar::examine(std::shared_ptr<const LoadedTrace> trace)
{
    if (!trace) {
        m_job->cancel();
        setFindings({});
        emit findingsReady(false);
        return;
    }
    m_job->start([trace = std::move(trace)](BackgroundJob::Control&) { return CaptureDoctor::examine(*trace); },
                 [this](const std::vector<CaptureFinding>& findings) {
                     setFindings(findings);
                     emit findingsReady(!m_findings.empty());
                 });
}

void CaptureBar::setFindings(const std::vector<CaptureFinding>& findings)
{
    m_findings = findings;
    size_t warnings = 0;
    const CaptureFinding* first = nullptr;
    for (const CaptureFinding& f : m_findings) {
        if (f.severity != CaptureFinding::Severity::Warning)
            continue;
        ++warnings;
        if (!first)
            first = &f;
    }
    const size_t notes = m_findings.size() - warnings;
    const QString counts = (warnings == 1 ? tr("1 warning") : tr("%1 warnings").arg(warnings)) + QStringLiteral(", ") +
                           (notes == 1 ? tr("1 note") : tr("%1 notes").arg(notes));
    const CaptureFinding* shown = first ? first : (m_findings.empty() ? nullptr : &m_findings.front());
    m_title->setText(first ? tr("<b>This capture cannot show everything</b> (%1):").arg(counts)
                           : tr("<b>Capture notes</b> (%1):").arg(counts));
    m_summaryText = shown ? QString::fromStdString(shown->message) + devicesText(*shown) : QString();
    m_summary->setToolTip(m_summaryText);
    elideSummary();

    QString list = QStringLiteral("<table cellspacing=\"2\">");
    for (const CaptureFinding& f : m_findings) {
        list += QStringLiteral("<tr><td valign=\"top\"><b>%1</b></td><td>%2%3<br/><i>%4</i> <code>%5</code></td></tr>")
                    .arg(f.severity == CaptureFinding::Severity::Warning ? tr("warning") : tr("note"),
                         html(f.message), devicesText(f), tr("Fix:"), html(f.fix));
    }
    list += QStringLiteral("</table>");
    m_details->setText(list);
    m_detailsButton->setChecked(false);
    showDetails(false);
}

void CaptureBar::resizeEvent(QResizeEvent* event)
{
    QFrame::resizeEvent(event);
    elideSummary();
}

void CaptureBar::elideSummary()
{
    m_summary->setText(m_summary->fontMetrics().elidedText(m_summaryText, Qt::ElideRight, m_summary->width()));
}

bool CaptureBar::detailsShown() const
{
    return m_detailsButton->isChecked();
}

void CaptureBar::showDetails(bool shown)
{
    m_detailsArea->setVisible(shown);
}

} // namespace headroom
