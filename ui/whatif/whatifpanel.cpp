// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifpanel.h"

#include "core/whatif/query/whatifsession.h"
#include "core/whatif/calibration/batchratio.h"

#include "ui/whatif/wheelguard.h"

#include "ui/whatif/allocatorsection.h"
#include "ui/whatif/calibrationjob.h"
#include "ui/whatif/calibrationruns.h"
#include "ui/whatif/ladderjob.h"
#include "ui/whatif/laddersection.h"
#include "ui/whatif/projectedtimelinejob.h"
#include "ui/whatif/whatifchart.h"
#include "ui/whatif/whatifconstantsdialog.h"
#include "ui/whatif/whatifleverform.h"
#include "ui/whatif/whatifmarkdown.h"
#include "ui/whatif/whatifverifydialog.h"

#include "core/analysis/diagnosis.h"
#include "core/analysis/memoryanalysis.h"
#include "core/util/units.h"
#include "core/whatif/projection/peakbreakdown.h"
#include "core/whatif/calibration/whatifmultifit.h"
#include "core/whatif/query/whatifsettings.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace headroom {

namespace {

constexpr double kGiB = double(1ull << 30);
constexpr int kLeversWidth = 290;

} // namespace


WhatIfPanel::WhatIfPanel(QWidget* parent)
    : QWidget(parent), m_calJob(new CalibrationJob(this)), m_timelineJob(new ProjectedTimelineJob(this)),
      m_ladderJob(new LadderJob(this)),
      m_runs(new CalibrationRuns(this))
{
    connect(m_calJob, &CalibrationJob::finished, this, &WhatIfPanel::applyCalibration);
    connect(m_timelineJob, &ProjectedTimelineJob::judged, this, &WhatIfPanel::adoptSimulatedVerdict);
    connect(m_ladderJob, &LadderJob::ready, this, &WhatIfPanel::showLadder);
    m_device = deviceForCapacity(0);
    buildUi();
}

WhatIfPanel::~WhatIfPanel() = default;

void WhatIfPanel::buildUi()
{
    auto* root = new QHBoxLayout(this);
    m_levers = new WhatIfLeverForm(this);
    auto* left = m_levers;
    m_allocator = new AllocatorSection;
    m_levers->addSection(m_allocator);
    // Narrow enough to leave the chart and the ladder most of a half-window dock.
    left->setMaximumWidth(kLeversWidth);
    // The levers scroll: without it their column set the panel's minimum height (671 px),
    // which made the window taller than a laptop screen once the panels were shown.
    auto* leftScroll = new QScrollArea(this);
    leftScroll->setObjectName(QStringLiteral("whatifLevers"));
    leftScroll->setWidget(left);
    leftScroll->setWidgetResizable(true);
    leftScroll->setFrameShape(QFrame::NoFrame);
    leftScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    leftScroll->setMaximumWidth(kLeversWidth + leftScroll->verticalScrollBar()->sizeHint().width());
    leftScroll->setMinimumWidth(left->minimumSizeHint().width() + leftScroll->verticalScrollBar()->sizeHint().width());
    root->addWidget(leftScroll);
    m_allocator->deferUntilVisible(leftScroll);

    auto* right = new QWidget(this);
    auto* rv = new QVBoxLayout(right);
    // The verdict and the ladder first: in the dock's default height (about 330 px of an 800 px
    // window) they are what must show without scrolling; the bars and the notes follow.
    m_summary = new QLabel(right);
    m_summary->setObjectName(QStringLiteral("whatifSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    rv->addWidget(m_summary);
    m_ladderSection = new LadderSection(right);
    rv->addWidget(m_ladderSection, 2);
    m_chart = new WhatIfChart(right);
    rv->addWidget(m_chart, 3);
    m_notes = new QLabel(right);
    m_notes->setObjectName(QStringLiteral("whatifNotes"));
    m_notes->setWordWrap(true);
    rv->addWidget(m_notes);
    root->addWidget(right, 1);

    connect(m_levers, &WhatIfLeverForm::leversChanged, this, [this] {
        if (m_updating)
            return;
        readControls();
        recompute();
    });
    connect(m_levers, &WhatIfLeverForm::statedChanged, this, [this] {
        if (!m_updating)
            setStated(m_levers->stated(m_stated));
    });
    // expandable_segments is both a lever of the model (its fragmentation share) and a setting
    // the replay runs under: one check box, in the Allocator section.
    connect(m_allocator, &AllocatorSection::expandableToggled, this, [this] {
        if (m_updating)
            return;
        readControls();
        recompute();
    });
    connect(m_allocator, &AllocatorSection::replayed, this, [this] { showSummary(); });
    connect(m_allocator, &AllocatorSection::curveReady, this, &WhatIfPanel::allocatorCurveReady);
    connect(m_allocator, &AllocatorSection::curveCleared, this, &WhatIfPanel::allocatorCurveCleared);
    connect(m_ladderSection, &LadderSection::rebuildRequested, this, [this] { rebuildLadder(); });
    connect(m_ladderSection, &LadderSection::constantsRequested, this, [this] { editConstants(); });
    connect(m_levers, &WhatIfLeverForm::addRunRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Another Run of the Same Job"), QString(),
                                                          tr("Memory snapshots (*.pickle *.pkl *.gz *.hrt *.json);;All files (*)"));
        if (!path.isEmpty())
            addCalibrationRun(path);
    });
    connect(m_runs, &CalibrationRuns::changed, this, [this] { recalibrate(); });
    connect(m_runs, &CalibrationRuns::failed, this, [this](const QString& why) {
        m_runsText = tr("<b>Run not added</b>: %1").arg(why.toHtmlEscaped());
        recalibrate();
    });
    connect(m_ladderSection, &LadderSection::compareRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("The Run That Followed"), QString(),
                                                          tr("Memory snapshots (*.pickle *.pkl *.gz *.hrt *.json);;All files (*)"));
        if (!path.isEmpty())
            compareWithRun(path);
    });
    connect(m_ladderSection, &LadderSection::spendFirstChosen, this, &WhatIfPanel::setSpendFirst);
    connect(m_ladderSection, &LadderSection::rungClicked, this, &WhatIfPanel::applyRung);
    WheelGuard::install(this);
}

void WhatIfPanel::adoptTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex,
                             std::shared_ptr<const DeviceAnalysis> analysis)
{
    if (trace != m_trace) { // the added runs belong to the job of the previous file
        const QSignalBlocker blocker(m_runs);
        m_runs->clear();
        m_runsText.clear();
    }
    m_trace = std::move(trace);
    m_analysis = std::move(analysis);
    m_deviceIndex = deviceIndex;
    m_session.reset();
    m_verdict.reset();
    // The file's capacity (the OOM record's) until the view passes the session's (setCapacity).
    if (m_trace)
        m_device = deviceForCapacity(estimateCapacity(*m_trace, size_t(deviceIndex), std::nullopt).bytes);
    m_levers->showCapacity(m_device.capacityBytes);
    m_allocator->setCapacity(m_device.capacityBytes);
    m_allocator->setTrace(m_trace, deviceIndex);
}

void WhatIfPanel::setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex,
                           std::shared_ptr<const DeviceAnalysis> analysis)
{
    adoptTrace(std::move(trace), deviceIndex, std::move(analysis));
    recalibrate();
}

void WhatIfPanel::setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex,
                           std::shared_ptr<const DeviceAnalysis> analysis,
                           std::shared_ptr<const WhatIfSession> fileSession)
{
    const StatedConfig& st = m_stated;
    const bool stated = st.microBatch || st.seq || st.devices || st.accum || st.precision || st.optimizer;
    bool defaults = true;
    const WhatIfConstants k0;
    for (const auto& e : WhatIfConstants::entries())
        defaults = defaults && m_k.*(e.member) == k0.*(e.member);
    const bool sameJob = trace == m_trace || m_runs->runs().empty();
    if (!fileSession || stated || !defaults || !sameJob) {
        setTrace(std::move(trace), deviceIndex, std::move(analysis));
        return;
    }
    adoptTrace(std::move(trace), deviceIndex, analysis);
    // The report's session is the one the panel would make: applied now.
    m_calJob->cancel();
    m_pendingConfig.reset();
    applyCalibration({std::move(analysis), std::move(fileSession), QString(), QString()});
}

void WhatIfPanel::setAnalyticModel(const ModelDims& dims, const LeverConfig& config)
{
    m_trace.reset();
    m_analysis.reset();
    m_verdict.reset();
    m_allocator->setTrace(nullptr, 0);
    m_dims = dims;
    WhatIfQuery q;
    q.dims = dims;
    q.constants = m_k;
    q.start = config;
    m_session = std::make_shared<const WhatIfSession>(q);
    m_base = m_session->baseline();
    m_haveBase = true;
    m_error.clear();
    m_config = config;
    writeControls();
    recompute();
    rebuildLadder();
}

void WhatIfPanel::setCapacity(int64_t bytes)
{
    m_device = deviceForCapacity(bytes);
    m_levers->showCapacity(bytes);
    m_allocator->setCapacity(bytes);
    recompute();
    rebuildLadder();
}

void WhatIfPanel::setAllocatorVerdict(std::optional<AllocatorVerdict> verdict)
{
    m_verdict = std::move(verdict);
    rebuildLadder();
}

void WhatIfPanel::setConstants(const WhatIfConstants& k)
{
    m_k = k;
    if (m_trace) {
        if (m_haveBase)
            setPending(m_config, m_base.microBatchUnits); // the levers stay where the user put them
        recalibrate();
    } else if (m_dims) {
        setAnalyticModel(*m_dims, m_config);
    }
}

void WhatIfPanel::setSpendFirst(std::optional<Currency> currency)
{
    m_spendFirst = currency;
    m_ladderSection->showSpendFirst(currency);
    rebuildLadder();
    emit settingsChanged(settingsJson());
}

bool WhatIfPanel::editConstants()
{
    WhatIfConstantsDialog dialog(m_k, this);
    if (dialog.exec() != QDialog::Accepted)
        return false;
    setConstants(dialog.constants());
    return true;
}

void WhatIfPanel::setStated(const StatedConfig& stated)
{
    // The levers the user moved stay moved over the recalibration a measured value starts.
    if (m_haveBase && !(m_config == m_base.config))
        setPending(m_config, m_base.microBatchUnits);
    m_stated = stated;
    if (m_trace)
        recalibrate();
}

void WhatIfPanel::recalibrate()
{
    m_error.clear();
    if (!m_trace || m_deviceIndex < 0 || size_t(m_deviceIndex) >= m_trace->snapshot.devices.size()) {
        m_calJob->cancel();
        m_haveBase = false;
        return;
    }
    // Off the GUI thread; until it answers, the levers show the last calibration's state
    // and a lever move waits (m_pendingConfig) for the new one.
    CalibrationJob::Input in;
    in.trace = m_trace;
    in.deviceIndex = size_t(m_deviceIndex);
    in.analysis = m_analysis;
    in.stated = m_stated;
    in.dims = m_dims.value_or(ModelDims{});
    in.constants = m_k;
    in.runs = m_runs->runs();
    in.runNames = m_runs->names();
    m_haveBase = false;
    m_summary->setText(tr("Calibrating on the trace\u2026"));
    m_calJob->start(std::move(in));
}

void WhatIfPanel::applyCalibration(const CalibrationJob::Outcome& out)
{
    if (out.analysis)
        m_analysis = out.analysis;
    m_error = out.error;
    // Without the measured micro-batch the lever still moves, in ratios of the measured run.
    m_session = out.session;
    m_runsText = out.runsText;
    m_haveBase = cal() != nullptr;
    if (cal()) {
        m_base = cal()->baseline;
        // The moves made meanwhile, in the new calibration's units (a ratio becomes a count
        // once the measured micro-batch is known).
        m_config = m_pendingConfig ? rebasedLevers(inBaselineUnits(*m_pendingConfig, m_pendingUnits, m_base),
                                                   inBaselineUnits(m_pendingFrom, m_pendingFromUnits, m_base),
                                                   m_base.config)
                                   : m_base.config;
        lockUnknown(m_config);
        m_levers->showMeasured(cal()->measured, m_runsText);
    }
    m_pendingConfig.reset();
    writeControls();
    recompute();
    rebuildLadder();
    emit calibrated();
}

bool WhatIfPanel::isCalibrating() const { return m_calJob->isRunning(); }

void WhatIfPanel::setPending(const LeverConfig& c, int units)
{
    if (!m_pendingConfig) {
        m_pendingFrom = m_base.config;
        m_pendingFromUnits = m_base.microBatchUnits;
    }
    m_pendingConfig = c;
    m_pendingUnits = units;
}

void WhatIfPanel::finishCalibration()
{
    m_calJob->finishNow();
    m_ladderJob->finishNow(); // the ladder the calibration rebuilt
}

void WhatIfPanel::readControls()
{
    LeverConfig c = m_levers->levers(m_config);
    c.expandableSegments = m_allocator->expandable();
    const int64_t chosen = m_levers->capacityBytes();
    if (chosen != m_device.capacityBytes) {
        m_device = deviceForCapacity(chosen);
        m_allocator->setCapacity(m_device.capacityBytes);
        emit capacityChosen(chosen); // the file's capacity: every view judges against it
    }
    lockUnknown(c);
    m_config = c;
    if (isCalibrating()) // what the user sets meanwhile is laid over the calibration to come
        setPending(c, m_base.microBatchUnits);
}

void WhatIfPanel::lockUnknown(LeverConfig& c) const
{
    // A lever whose measured value is unknown is locked (WhatIfLeverForm::showLevers): it stays as
    // measured, whatever its widget shows (a spin box cannot show "unknown" devices). One left
    // unknown by an earlier calibration takes the new one's value.
    if (!cal())
        return;
    const LeverConfig& b = m_base.config;
    if ((!cal()->known("micro_batch") && m_base.microBatchUnits == 0) || c.microBatch <= 0)
        c.microBatch = b.microBatch;
    if (!cal()->known("seq") || c.seq <= 0)
        c.seq = b.seq;
    if (!cal()->known("precision"))
        c.precision = b.precision;
    if (!cal()->known("devices") || c.devices <= 0) {
        c.devices = b.devices;
        c.zero = b.zero;
    }
}

void WhatIfPanel::writeControls()
{
    m_updating = true;
    m_levers->showLevers(m_config, cal());
    m_levers->showStated(m_stated, m_trace != nullptr);
    m_allocator->showExpandable(m_config.expandableSegments);
    m_updating = false;
}

void WhatIfPanel::setConfig(const LeverConfig& config) { setConfigIn(config, m_base.microBatchUnits); }

void WhatIfPanel::setConfigIn(const LeverConfig& config, int units)
{
    if (isCalibrating()) // applied over the calibration that is on its way
        setPending(config, units);
    m_config = isCalibrating() ? config : inBaselineUnits(config, units, m_base);
    writeControls();
    recompute();
}

void WhatIfPanel::recompute()
{
    m_levers->showCounts(m_config);
    m_summaryText.clear();
    if (!m_haveBase) {
        m_summary->setText(m_error.isEmpty() ? tr("Open a trace or choose a model.") : QStringLiteral("<b>%1</b>").arg(m_error.toHtmlEscaped()));
        return;
    }
    QString missing;
    if (cal()) {
        try {
            cal()->require(m_config);
        } catch (const WhatIfMissingValue& e) {
            const QString field = e.key == "micro_batch" ? tr("micro-batch")
                                  : e.key == "seq"       ? tr("sequence")
                                  : e.key == "devices"   ? tr("device count")
                                                         : QString::fromStdString(e.key);
            missing = tr("the trace does not tell the %1 it was measured at").arg(field);
        }
    }
    if (!missing.isEmpty()) {
        // As the CLI (exit 2): no figure for a request the trace cannot answer.
        m_summary->setText(tr("<b>Needs a measured value</b>: %1. Set it under <i>Measured at</i>.")
                               .arg(missing.toHtmlEscaped()));
        m_notes->clear();
        m_chart->set(nullptr, project(m_base, m_base.config, m_k, m_device));
        m_timelineJob->clear();
        emit configChanged();
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    // The session's answer, as the CLI's (core/whatif/query/whatifsession.h); the allocator's
    // simulation runs in the timeline job, off the slider's path.
    m_projection = m_session->project(m_config, m_device, BatchUnits::Ratios, Simulation::Later);
    m_lastRecomputeUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    m_measured = m_session->project(m_base.config, m_device, BatchUnits::Ratios, Simulation::Later);
    m_chart->set(cal() ? &m_measured : nullptr, m_projection, cal() ? cal()->iteration : -1);
    const Projection& p = m_projection;
    m_summaryText = projectionSummaryHtml(p, m_device, m_k);
    showSummary();
    QStringList notes = replayLines(p);
    for (const auto& n : p.notes)
        notes << QString::fromStdString(n);
    m_notes->setText(notes.join(QStringLiteral("\n")));
    // At the measured levers too: nothing to draw, but the verdict is the simulation's, as in
    // `headroom-cli whatif`.
    if (cal() && m_trace)
        m_timelineJob->request(m_base, m_config, m_projection, *m_trace, m_deviceIndex, !(m_config == m_base.config));
    else
        m_timelineJob->clear();
    emit configChanged();
    emit settingsChanged(settingsJson());
}

void WhatIfPanel::adoptSimulatedVerdict()
{
    // The simulated run judges the projection as `whatif` does (judgeBySimulation): the
    // verdict shown is the simulation's once it arrives for the levers on screen.
    // The job's latest request is the projection on screen (a change of levers or device
    // recomputes and requests again), so the judged one replaces it whole.
    const Projection* simulated = m_timelineJob->latestProjection();
    if (simulated && simulated->config == m_projection.config && !m_summaryText.isEmpty() &&
        simulated->verdict != m_projection.verdict) {
        m_projection = *simulated;
        m_summaryText = projectionSummaryHtml(m_projection, m_device, m_k);
    }
    showSummary();
}

void WhatIfPanel::showSummary()
{
    if (m_summaryText.isEmpty())
        return; // recompute() wrote why there is no projection
    const QString replay = m_allocator->result() && !m_allocator->isRecordedSetting()
                               ? QStringLiteral("<br>") + tr("Allocator replay of the recorded requests: ") +
                                     m_allocator->summaryHtml()
                               : QString();
    const QString reserved = m_timelineJob->reservedVerdict();
    m_summary->setText(m_summaryText + (reserved.isEmpty() ? QString() : QStringLiteral("<br><b>%1</b>").arg(reserved.toHtmlEscaped())) +
                       replay);
}

void WhatIfPanel::rebuildLadder()
{
    m_ladderSection->clear();
    if (!m_haveBase)
        return;
    if (m_device.capacityBytes <= 0) { // as the CLI's ladder: nothing to fit without a capacity
        m_ladder = {};
        m_ladderSection->showMessage(tr("Choose a capacity (under the levers) to build the ladder."));
        emit ladderChanged();
        return;
    }
    // The session's ladder, as the CLI's and the diagnosis's (core/whatif/query/whatifsession.h).
    LadderRequest r;
    r.device = m_device;
    r.start = m_config;
    // The replay answered for this capacity; at another it says nothing.
    if (m_verdict && m_verdict->capacity == m_device.capacityBytes)
        r.allocator = m_verdict;
    r.availableDevices = std::max(1, m_config.devices);
    if (m_spendFirst) {
        r.currencyOrder = {*m_spendFirst};
        for (Currency cur : kDefaultCurrencyOrder)
            if (cur != *m_spendFirst)
                r.currencyOrder.push_back(cur);
    }
    m_ladder = {};
    m_ladderSection->showPending();
    m_ladderJob->request(m_session, std::move(r));
}

void WhatIfPanel::showLadder(const Ladder& ladder, const LeverConfig& start)
{
    m_ladder = ladder;
    m_ladderStart = start;
    m_ladderSection->setLadder(m_ladder);
    emit ladderChanged();
}

void WhatIfPanel::finishLadderNow() { m_ladderJob->finishNow(); }

void WhatIfPanel::addCalibrationRun(const QString& path)
{
    m_runsText.clear();
    m_runs->add(path, m_stated, m_k, size_t(std::max(0, m_deviceIndex)));
}

WhatIfVerifyDialog* WhatIfPanel::compareWithRun(const QString& path)
{
    if (!cal() || !m_haveBase)
        return nullptr;
    const LeverConfig& b = m_base.config;
    LeverMask moved; // what the panel moved; AFTER's file tells the rest
    moved.microBatch = m_config.microBatch != b.microBatch;
    moved.accum = m_config.accum != b.accum;
    moved.seq = m_config.seq != b.seq;
    moved.precision = m_config.precision != b.precision;
    moved.optimizer = m_config.optimizer != b.optimizer;
    moved.devices = m_config.devices != b.devices;
    moved.checkpoint = m_config.checkpoint != b.checkpoint || m_config.checkpointEvery != b.checkpointEvery;
    auto* dialog = new WhatIfVerifyDialog(m_session, m_config, moved, m_device, size_t(std::max(0, m_deviceIndex)),
                                          path, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
    return dialog;
}

void WhatIfPanel::applyRung(int i)
{
    if (i < 0 || size_t(i) >= m_ladder.rungs.size())
        return;
    setConfig(m_ladder.rungs[size_t(i)].config);
    emit rungApplied(i);
}

WhatIfSettings WhatIfPanel::settings() const
{
    WhatIfSettings st;
    st.config = m_config;
    st.microBatchUnits = m_base.microBatchUnits;
    st.stated = m_stated;
    st.capacityBytes = m_device.capacityBytes;
    st.spendFirst = m_spendFirst;
    st.constants = m_k;
    return st;
}

QString WhatIfPanel::settingsJson() const
{
    return QString::fromStdString(whatIfSettingsJson(settings()).dump());
}

bool WhatIfPanel::restoreSettings(const QString& json)
{
    const nlohmann::json j = nlohmann::json::parse(json.toStdString(), nullptr, /*allow_exceptions=*/false);
    const std::optional<WhatIfSettings> st = whatIfSettingsFromJson(j, settings());
    if (!st)
        return false;
    m_k = st->constants;
    if (!m_trace && m_dims) // the model's session is made with the constants (a trace's: by setStated)
        setAnalyticModel(*m_dims, m_config);
    m_spendFirst = st->spendFirst;
    m_ladderSection->showSpendFirst(m_spendFirst);
    if (m_trace)
        setStated(st->stated);
    const bool newCapacity = st->capacityBytes > 0 && st->capacityBytes != m_device.capacityBytes;
    if (newCapacity)
        m_device = deviceForCapacity(st->capacityBytes);
    setConfigIn(st->config, st->microBatchUnits);
    m_levers->showCapacity(m_device.capacityBytes);
    m_allocator->setCapacity(m_device.capacityBytes);
    if (newCapacity) // the saved capacity is the file's again, in every view
        emit capacityChosen(m_device.capacityBytes);
    return true;
}

QString WhatIfPanel::markdown() const
{
    if (!m_haveBase)
        return tr("_No what-if projection: %1_\n").arg(m_error.isEmpty() ? tr("no trace or model.") : m_error);
    m_ladderJob->finishNow(); // the ladder being built is delivered (showLadder) before it is written
    QString md = whatIfMarkdown(m_projection, m_ladder, cal(), m_device);
    if (m_allocator->result() && !m_allocator->isRecordedSetting())
        md += tr("\nAllocator replay of the recorded requests: %1\n")
                  .arg(QTextDocumentFragment::fromHtml(m_allocator->summaryHtml()).toPlainText());
    return md;
}

} // namespace headroom
