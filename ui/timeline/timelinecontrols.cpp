// SPDX-License-Identifier: MIT
#include "ui/timeline/timelinecontrols.h"

#include "core/io/loader.h"
#include "core/replay/allocatorreplay.h"
#include "ui/explorer/backgroundjob.h"
#include "ui/timeline/timelinestate.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QShortcut>
#include <QSpinBox>
#include <QVBoxLayout>

#include <exception>

namespace headroom {

using Mode = TimelineView::Mode;

namespace {

/// Why the device's allocator cannot be replayed; empty when it can. The replay needs the
/// allocator's own requests and segment events, which only memory snapshots record.
QString whyNoReplay(const TimelineState& state)
{
    if (!state.device)
        return TimelineView::tr("Open a PyTorch memory snapshot to simulate its allocator");
    const std::string& format = state.device->sourceFormat;
    if (!format.empty() && format.rfind("snapshot", 0) != 0)
        return TimelineView::tr("Only PyTorch memory snapshots record the allocator's requests and segments; "
                                "this device comes from a %1")
            .arg(QString::fromStdString(format));
    if (state.eventCount() == 0)
        return TimelineView::tr("This device has no trace entries: there are no allocator requests to replay");
    return QString();
}

std::vector<int64_t> replayRecordedSetting(const LoadedTrace& trace, size_t device)
{
    try {
        AllocatorReplayOptions options;
        options.keepCurve = true;
        return replayAllocator(trace.snapshot, trace.snapshot.devices[device], trace.timelines[device], options)
            .simulatedReserved;
    } catch (const std::exception&) {
        return {}; // no curve: the toggle goes back off
    }
}

} // namespace

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
    m_simulatedCheck = new QCheckBox(TimelineView::tr("Simulated reserved"), view);
    m_simulatedCheck->setObjectName(QStringLiteral("simulatedReservedToggle"));
    m_simulatedCheck->setEnabled(false);
    m_replay = new BackgroundJob(view);
    bar->addWidget(new QLabel(TimelineView::tr("Show:"), view));
    bar->addWidget(m_modeCombo);
    bar->addWidget(m_detailSpin);
    bar->addWidget(m_simulatedCheck);
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
    BackgroundJob* replay = m_replay;
    QObject::connect(m_simulatedCheck, &QCheckBox::toggled, view, [view, replay](bool on) {
        if (!on) {
            view->clearSimulatedReserved();
            return;
        }
        const TimelineState& state = view->state();
        if (!state.trace || state.deviceIndex < 0)
            return;
        // The curve arrives in setSimulatedReserved, which keeps the box checked.
        replay->start([trace = state.trace, device = size_t(state.deviceIndex)](BackgroundJob::Control&) {
            return replayRecordedSetting(*trace, device);
        },
                      [view](std::vector<int64_t> curve) {
                          view->setSimulatedReserved(std::move(curve), recordedSettingLabel());
                      });
    });
}

TimelineControls::~TimelineControls() = default;

QString TimelineControls::recordedSettingLabel()
{
    return TimelineView::tr("reserved, simulated (recorded setting)");
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

void TimelineControls::showSimulatedReserved(bool shown)
{
    m_replay->cancel();
    const QSignalBlocker block(m_simulatedCheck);
    m_simulatedCheck->setChecked(shown);
}

void TimelineControls::deviceChanged(const TimelineState& state)
{
    showSimulatedReserved(false);
    const QString why = whyNoReplay(state);
    m_simulatedCheck->setEnabled(why.isEmpty());
    m_simulatedCheck->setToolTip(
        why.isEmpty() ? TimelineView::tr("Replays this device's allocator under the setting the snapshot recorded and "
                                         "draws the reserved memory it simulates, dashed, over the recorded curve")
                      : why);
}

} // namespace headroom
