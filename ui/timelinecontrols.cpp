// SPDX-License-Identifier: MIT
#include "ui/timelinecontrols.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QShortcut>
#include <QSpinBox>
#include <QVBoxLayout>

namespace headroom {

using Mode = TimelineView::Mode;

TimelineControls::TimelineControls(TimelineView* view, QVBoxLayout* layout)
{
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(4, 2, 4, 0);
    m_modeCombo = new QComboBox(view);
    m_modeCombo->addItem(TimelineView::tr("By category"), int(Mode::ByCategory));
    m_modeCombo->addItem(TimelineView::tr("By allocation"), int(Mode::ByAllocation));
    m_modeCombo->setToolTip(TimelineView::tr("By category: stacked areas per tensor category.\n"
                                             "By allocation: every large allocation as its own band, stacked by birth, "
                                             "as PyTorch's Active Memory Timeline draws it (Ctrl+Shift+M toggles)"));
    m_detailSpin = new QSpinBox(view);
    m_detailSpin->setRange(10, 20000);
    m_detailSpin->setSingleStep(100);
    m_detailSpin->setValue(view->bandDetail());
    m_detailSpin->setSuffix(TimelineView::tr(" bands"));
    m_detailSpin->setToolTip(TimelineView::tr("Detail: how many of the largest allocations get their own band; "
                                              "the smaller ones are merged into the grey band at the bottom"));
    m_detailSpin->setEnabled(false);
    bar->addWidget(new QLabel(TimelineView::tr("Show:"), view));
    bar->addWidget(m_modeCombo);
    bar->addWidget(m_detailSpin);
    bar->addStretch();
    layout->insertLayout(0, bar);
    QComboBox* combo = m_modeCombo;
    QObject::connect(combo, &QComboBox::currentIndexChanged, view,
                     [view, combo](int i) { view->setMode(Mode(combo->itemData(i).toInt())); });
    QSpinBox* spin = m_detailSpin;
    QObject::connect(spin, &QSpinBox::editingFinished, view, [view, spin] { view->setBandDetail(spin->value()); });
    auto* toggle = new QShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M), view);
    QObject::connect(toggle, &QShortcut::activated, view, [view] {
        view->setMode(view->mode() == Mode::ByCategory ? Mode::ByAllocation : Mode::ByCategory);
    });
}

void TimelineControls::showMode(Mode mode)
{
    const QSignalBlocker block(m_modeCombo);
    m_modeCombo->setCurrentIndex(m_modeCombo->findData(int(mode)));
    m_detailSpin->setEnabled(mode == Mode::ByAllocation);
}

void TimelineControls::showBandDetail(int maxBands)
{
    const QSignalBlocker block(m_detailSpin);
    m_detailSpin->setValue(maxBands);
}

} // namespace headroom
