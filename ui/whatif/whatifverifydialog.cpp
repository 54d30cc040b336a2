// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifverifydialog.h"

#include "core/io/loader.h"
#include "core/util/units.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/plot/categorystyle.h"
#include "ui/whatif/whatifchart.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace headroom {

namespace {

struct Outcome {
    Verification v;
    QString error;
};

QString bytes(double b) { return formatBytesQ(int64_t(b), 2); }

} // namespace

WhatIfVerifyDialog::WhatIfVerifyDialog(std::shared_ptr<const WhatIfSession> before, const LeverConfig& target,
                                       const LeverMask& moved, const DeviceSpec& device, size_t deviceIndex,
                                       const QString& afterPath, QWidget* parent)
    : QDialog(parent)
    , m_summary(new QLabel(this))
    , m_terms(new QTableWidget(0, 3, this))
{
    setWindowTitle(tr("Compare with %1").arg(QFileInfo(afterPath).fileName()));
    m_summary->setObjectName(QStringLiteral("verifySummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setText(tr("Reading %1\u2026").arg(QFileInfo(afterPath).fileName().toHtmlEscaped()));
    m_terms->setObjectName(QStringLiteral("verifyTerms"));
    m_terms->setHorizontalHeaderLabels({tr("Term"), tr("Projected"), tr("Measured")});
    m_terms->horizontalHeader()->setStretchLastSection(true);
    m_terms->verticalHeader()->hide();
    m_terms->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_summary);
    layout->addWidget(m_terms, 1);
    layout->addWidget(buttons);
    resize(560, 380);

    // A copy of everything the worker needs: the dialog may close before it is done.
    const std::string path = afterPath.toStdString();
    auto* job = new BackgroundJob(this);
    job->start(
        [before, target, moved, device, deviceIndex, path](BackgroundJob::Control& control) -> Outcome {
            Outcome o;
            try {
                LoadOptions options;
                options.cancel = control.cancelFlag();
                const auto after = Loader::load(path, options);
                if (deviceIndex >= after->snapshot.devices.size())
                    throw std::runtime_error(path + ": has " + std::to_string(after->snapshot.devices.size()) +
                                             " device(s), not the device " + std::to_string(deviceIndex) +
                                             " the panel projects");
                o.v = before->verify(*after, deviceIndex, target, moved, device, BatchUnits::Ratios);
            } catch (const std::exception& e) {
                o.error = QString::fromStdString(e.what());
            }
            return o;
        },
        [this](const Outcome& o) {
            m_done = true;
            m_error = o.error;
            if (o.error.isEmpty())
                present(o.v);
            else
                m_summary->setText(QStringLiteral("<b>%1</b>").arg(o.error.toHtmlEscaped()));
            emit verified();
        });
}

WhatIfVerifyDialog::~WhatIfVerifyDialog() = default;

void WhatIfVerifyDialog::present(const Verification& v)
{
    m_result = v;
    const QString err = QString::asprintf("%+.1f%%", v.error * 100);
    QString s = tr("Projected peak allocated <b>%1</b> (band %2 .. %3), measured <b>%4</b>: error <b>%5</b>, %6.")
                    .arg(bytes(v.projection.peakAllocated), bytes(v.projection.peakAllocatedLow),
                         bytes(v.projection.peakAllocatedHigh), bytes(v.measuredPeak), err,
                         v.bandHolds ? tr("the band holds it") : tr("outside the band"));
    if (!v.calibrationError.empty())
        s += tr("<br>Term by term: unavailable (%1).").arg(QString::fromStdString(v.calibrationError).toHtmlEscaped());
    else if (!v.terms.empty())
        s += tr("<br>Term by term at the %1; the most off: <b>%2</b>.")
                 .arg(QString::fromUtf8(std::string(stepPhaseLabel(v.phase)).c_str()),
                      QString::fromStdString(v.terms.front().name));
    m_summary->setText(s);
    m_terms->setRowCount(0);
    for (const TermCheck& t : v.terms) {
        if (t.projected == 0 && t.measured == 0)
            continue;
        const int row = m_terms->rowCount();
        m_terms->insertRow(row);
        m_terms->setItem(row, 0, new QTableWidgetItem(WhatIfChart::componentLabel(t.name)));
        m_terms->setItem(row, 1, new QTableWidgetItem(bytes(t.projected)));
        m_terms->setItem(row, 2, new QTableWidgetItem(bytes(t.measured)));
    }
    m_terms->resizeColumnsToContents();
}

} // namespace headroom
