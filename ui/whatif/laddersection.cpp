// SPDX-License-Identifier: MIT
#include "ui/whatif/laddersection.h"

#include "ui/plot/categorystyle.h"
#include "ui/whatif/whatifmarkdown.h"

#include "core/whatif/query/whatifjson.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace headroom {

namespace {

/// Projected sizes in the units of the preferences, one decimal ("52.3 GiB", "56.2 GB").
QString projected(double bytes) { return formatBytesQ(int64_t(bytes), 1); }

/// The rung's line: what it is, its peak and verdict.
QString rungHeadline(const Ladder& ladder, size_t i)
{
    const Rung& r = ladder.rungs[i];
    return QStringLiteral("%1. %2 -> %3 (high %4), %5, %6")
        .arg(i + 1)
        .arg(QString::fromStdString(r.title), projected(r.projection.peak), projected(r.projection.peakHigh),
             QString::fromStdString(std::string(verdictName(r.projection.verdict))))
        .arg(QString::fromStdString(rungTimeText(r.projection)));
}

/// The headline with what the rung costs, what it sets and its warnings.
QString rungText(const Ladder& ladder, size_t i)
{
    const Rung& r = ladder.rungs[i];
    QString text = rungHeadline(ladder, i) + QStringLiteral("\n    ") + rungCosts(r);
    text += QStringLiteral("\n    ") + rungSettings(ladder, i);
    for (const auto& w : r.warnings)
        text += QStringLiteral("\n    ! ") + QString::fromStdString(w);
    return text;
}

} // namespace

LadderSection::LadderSection(QWidget* parent) : QWidget(parent)
{
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    // The heading (and Compare) on a line of its own, the controls below: one row of all set
    // the panel's minimum width near 1000 px.
    auto* heading = new QHBoxLayout;
    auto* title = new QLabel(tr("<b>Make it fit</b>: click a rung to apply it"), this);
    title->setWordWrap(true); // the half-window dock of a 1280 px screen is about 370 px wide here
    heading->addWidget(title, 1);
    auto* compare = new QPushButton(tr("Compare with a Run\u2026"), this);
    compare->setObjectName(QStringLiteral("whatifCompare"));
    compare->setToolTip(tr("Check this projection against the run that followed: its measured peak, the "
                           "error and the term that was off (headroom-cli whatif --verify)"));
    heading->addWidget(compare);
    v->addLayout(heading);
    // Two buttons a row: one row of all four set a minimum width the dock does not have.
    auto* controls = new QHBoxLayout;
    auto* fit = new QPushButton(tr("Rebuild ladder"), this);
    fit->setObjectName(QStringLiteral("whatifFit"));
    m_spendFirst = new QComboBox(this);
    m_spendFirst->addItem(tr("default order"), -1);
    for (Currency cur : kDefaultCurrencyOrder)
        m_spendFirst->addItem(QString::fromStdString(std::string(currencyName(cur))), int(cur));
    m_spendFirst->setToolTip(tr("The currency the ladder spends first (someone with spare GPUs spends hardware "
                                "before throughput); the others follow in the default order: engineering time, "
                                "throughput, hardware, fidelity"));
    auto* constants = new QPushButton(tr("Constants\u2026"), this);
    constants->setToolTip(tr("Edit the model's constants (MFU, bandwidths, overlap, margins); guesses are marked"));
    controls->addStretch();
    controls->addWidget(new QLabel(tr("Spend first:"), this));
    controls->addWidget(m_spendFirst);
    heading->addWidget(constants);
    controls->addWidget(fit);
    v->addLayout(controls);
    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("whatifLadder"));
    m_list->setWordWrap(true);
    v->addWidget(m_list, 1);

    connect(fit, &QPushButton::clicked, this, &LadderSection::rebuildRequested);
    connect(constants, &QPushButton::clicked, this, &LadderSection::constantsRequested);
    connect(compare, &QPushButton::clicked, this, &LadderSection::compareRequested);
    connect(m_spendFirst, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (m_updating)
            return;
        const int c = m_spendFirst->itemData(index).toInt();
        emit spendFirstChosen(c < 0 ? std::nullopt : std::optional<Currency>(Currency(c)));
    });
    connect(m_list, &QListWidget::itemClicked, this, &LadderSection::onItemClicked);
}

void LadderSection::clear() { m_list->clear(); }

void LadderSection::showMessage(const QString& text)
{
    m_list->clear();
    m_list->addItem(text);
}

void LadderSection::showPending()
{
    m_list->clear();
    m_list->addItem(tr("Building the ladder: each rung's requests through the caching allocator..."));
}

void LadderSection::setLadder(const Ladder& ladder)
{
    m_list->clear();
    if (ladder.fitsAsIs)
        m_list->addItem(tr("It fits as it is."));
    for (size_t i = 0; i < ladder.rungs.size(); ++i) {
        // One line a rung, so the first rungs show in the dock's default height; the first
        // that fits, the ladder's answer, in full; every rung's costs in its tooltip.
        const bool answer = int(i) == ladder.firstFit;
        auto* it = new QListWidgetItem(answer ? rungText(ladder, i) : rungHeadline(ladder, i), m_list);
        it->setToolTip(rungText(ladder, i));
        it->setData(Qt::UserRole, int(i));
        if (ladder.rungs[i].projection.fits)
            it->setForeground(QColor(0x2e, 0x7d, 0x32));
    }
    if (!ladder.fitsAsIs && ladder.firstFit < 0)
        m_list->addItem(tr("No rung fits: see the alternatives by currency (headroom-cli ladder)."));
    // After the rungs: in a short dock the first rungs are what must show without scrolling.
    for (const auto& w : ladder.warnings)
        m_list->addItem(QStringLiteral("! ") + QString::fromStdString(w));
}

void LadderSection::showSpendFirst(std::optional<Currency> currency)
{
    m_updating = true;
    m_spendFirst->setCurrentIndex(std::max(0, m_spendFirst->findData(currency ? int(*currency) : -1)));
    m_updating = false;
}

void LadderSection::onItemClicked(QListWidgetItem* item)
{
    const QVariant v = item ? item->data(Qt::UserRole) : QVariant();
    if (v.isValid())
        emit rungClicked(v.toInt());
}

} // namespace headroom
