// SPDX-License-Identifier: MIT
#include "ui/whatifpanel.h"

#include "ui/calibrationruns.h"
#include "ui/categorystyle.h"
#include "ui/whatifchart.h"
#include "ui/whatifconstantsdialog.h"
#include "ui/whatifmarkdown.h"
#include "ui/whatifverifydialog.h"

#include "core/diagnosis.h"
#include "core/memoryanalysis.h"
#include "core/units.h"
#include "core/whatifmultifit.h"
#include "core/whatifsettings.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include <chrono>
#include <cmath>

namespace headroom {

namespace {

constexpr double kGiB = double(1ull << 30);
constexpr int kLeversWidth = 290;

/// Projected sizes in the units of the preferences, one decimal ("52.3 GiB", "56.2 GB").
QString projected(double bytes) { return formatBytesQ(int64_t(bytes), 1); }

} // namespace


WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent), m_runs(new CalibrationRuns(this))
{
    m_device = *devicePreset("80gib");
    buildUi();
}

WhatIfPanel::~WhatIfPanel() = default;

void WhatIfPanel::buildUi()
{
    auto* root = new QHBoxLayout(this);
    auto* left = new QWidget(this);
    auto* form = new QFormLayout(left);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    auto slider = [&](QSlider*& s, QLabel*& l, int max) {
        auto* w = new QWidget(left);
        auto* h = new QHBoxLayout(w);
        h->setContentsMargins(0, 0, 0, 0);
        s = new QSlider(Qt::Horizontal, w);
        s->setRange(1, max);
        l = new QLabel(QStringLiteral("1"), w);
        l->setMinimumWidth(28);
        h->addWidget(s);
        h->addWidget(l);
        return w;
    };
    form->addRow(tr("Micro-batch"), slider(m_microBatch, m_microBatchLabel, 64));
    form->addRow(tr("Accumulation"), slider(m_accum, m_accumLabel, 64));
    m_seq = new QSpinBox(left);
    m_seq->setRange(0, 1 << 20);
    m_seq->setSpecialValueText(tr("unknown"));
    form->addRow(tr("Sequence"), m_seq);
    m_checkpoint = new QComboBox(left);
    for (const char* c : {"none", "selective", "every:4", "every:2", "full"})
        m_checkpoint->addItem(QString::fromLatin1(c));
    form->addRow(tr("Checkpointing"), m_checkpoint);
    m_precision = new QComboBox(left);
    for (const char* c : {"fp32", "amp-bf16", "amp-fp16", "bf16"})
        m_precision->addItem(QString::fromLatin1(c));
    form->addRow(tr("Precision"), m_precision);
    m_optimizer = new QComboBox(left);
    for (const char* c : {"adamw", "adamw-fused", "adam8bit", "adafactor", "sgd", "sgd-momentum"})
        m_optimizer->addItem(QString::fromLatin1(c));
    form->addRow(tr("Optimizer"), m_optimizer);
    m_zero = new QComboBox(left);
    for (const char* c : {"none (DDP)", "ZeRO-1", "ZeRO-2", "ZeRO-3 / FSDP"})
        m_zero->addItem(QString::fromLatin1(c));
    form->addRow(tr("Sharding"), m_zero);
    m_devices = new QSpinBox(left);
    m_devices->setObjectName(QStringLiteral("devicesLever"));
    m_devices->setRange(1, 4096);
    form->addRow(tr("Devices"), m_devices);
    m_offload = new QComboBox(left);
    for (const char* c : {"none", "optimizer", "params"})
        m_offload->addItem(QString::fromLatin1(c));
    form->addRow(tr("CPU offload"), m_offload);
    m_lora = new QDoubleSpinBox(left);
    m_lora->setRange(0.0001, 1.0);
    m_lora->setDecimals(4);
    m_lora->setSingleStep(0.01);
    form->addRow(tr("Trainable fraction"), m_lora);
    m_flash = new QCheckBox(tr("FlashAttention"), left); // fits the levers column; the tool tip says the rest
    m_flash->setToolTip(tr("FlashAttention or fused scaled-dot-product attention: no b*s^2 attention scores stored"));
    form->addRow(QString(), m_flash);
    m_expandable = new QCheckBox(tr("expandable_segments"), left);
    form->addRow(QString(), m_expandable);
    m_capacity = new QComboBox(left);
    for (int g : {24, 40, 48, 80, 94, 141})
        m_capacity->addItem(QString::number(g) + QStringLiteral(" GiB"), g);
    m_capacity->setCurrentIndex(3);
    form->addRow(tr("Capacity"), m_capacity);

    auto* measuredBox = new QGroupBox(tr("Measured at"), left);
    auto* mf = new QFormLayout(measuredBox);
    m_measuredB = new QSpinBox(measuredBox);
    m_measuredB->setObjectName(QStringLiteral("measuredMicroBatch"));
    m_measuredB->setRange(0, 4096);
    m_measuredB->setSpecialValueText(tr("unknown"));
    m_measuredS = new QSpinBox(measuredBox);
    m_measuredS->setObjectName(QStringLiteral("measuredSeq"));
    m_measuredS->setRange(0, 1 << 20);
    m_measuredS->setSpecialValueText(tr("unknown"));
    m_measuredD = new QSpinBox(measuredBox);
    m_measuredD->setObjectName(QStringLiteral("measuredDevices"));
    m_measuredD->setRange(0, 65536);
    m_measuredD->setSpecialValueText(tr("unknown"));
    m_measuredP = new QComboBox(measuredBox);
    m_measuredP->addItem(tr("unknown"));
    for (const char* c : {"fp32", "amp-bf16", "amp-fp16", "bf16"})
        m_measuredP->addItem(QString::fromLatin1(c));
    mf->addRow(tr("micro-batch"), m_measuredB);
    mf->addRow(tr("sequence"), m_measuredS);
    mf->addRow(tr("precision"), m_measuredP);
    mf->addRow(tr("devices"), m_measuredD);
    m_addRunButton = new QPushButton(tr("Add a Calibration Run\u2026"), measuredBox);
    m_addRunButton->setObjectName(QStringLiteral("whatifAddRun"));
    m_addRunButton->setToolTip(tr("Another snapshot of the same job at another micro-batch or sequence length: "
                                  "the batch terms are then measured, not inferred (headroom-cli whatif FILE1 FILE2)"));
    mf->addRow(m_addRunButton);
    m_measuredInfo = new QLabel(measuredBox);
    m_measuredInfo->setWordWrap(true);
    mf->addRow(m_measuredInfo);
    form->addRow(measuredBox);
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

    auto* right = new QWidget(this);
    auto* rv = new QVBoxLayout(right);
    m_chart = new WhatIfChart(right);
    rv->addWidget(m_chart, 3);
    m_summary = new QLabel(right);
    m_summary->setObjectName(QStringLiteral("whatifSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    rv->addWidget(m_summary);
    m_notes = new QLabel(right);
    m_notes->setWordWrap(true);
    rv->addWidget(m_notes);
    // The ladder's heading (and Compare) on a line of its own, its controls below: one row of all set
    // the panel's minimum width near 1000 px.
    auto* heading = new QHBoxLayout;
    heading->addWidget(new QLabel(tr("<b>Make it fit</b>: click a rung to apply it"), right), 1);
    rv->addLayout(heading);
    auto* lh = new QHBoxLayout;
    m_fit = new QPushButton(tr("Rebuild ladder"), right);
    m_spendFirstCombo = new QComboBox(right);
    m_spendFirstCombo->addItem(tr("default order"), -1);
    for (Currency cur : {Currency::Engineering, Currency::Throughput, Currency::Hardware, Currency::Fidelity})
        m_spendFirstCombo->addItem(QString::fromStdString(std::string(currencyName(cur))), int(cur));
    m_spendFirstCombo->setToolTip(tr("The currency the ladder spends first (someone with spare GPUs spends hardware "
                                     "before throughput); the others follow in the default order: engineering time, "
                                     "throughput, hardware, fidelity"));
    m_constantsButton = new QPushButton(tr("Constants\u2026"), right);
    m_constantsButton->setToolTip(tr("Edit the model's constants (MFU, bandwidths, overlap, margins); guesses are marked"));
    m_compareButton = new QPushButton(tr("Compare with a Run\u2026"), right);
    m_compareButton->setObjectName(QStringLiteral("whatifCompare"));
    m_compareButton->setToolTip(tr("Check this projection against the run that followed: its measured peak, the "
                                   "error and the term that was off (headroom-cli whatif --verify)"));
    heading->addWidget(m_compareButton);
    lh->addStretch();
    lh->addWidget(new QLabel(tr("Spend first:"), right));
    lh->addWidget(m_spendFirstCombo);
    lh->addWidget(m_constantsButton);
    lh->addWidget(m_fit);
    rv->addLayout(lh);
    m_ladderList = new QListWidget(right);
    m_ladderList->setWordWrap(true);
    rv->addWidget(m_ladderList, 2);
    root->addWidget(right, 1);

    auto changed = [this] {
        if (m_updating)
            return;
        readControls();
        recompute();
    };
    connect(m_microBatch, &QSlider::valueChanged, this, changed);
    connect(m_accum, &QSlider::valueChanged, this, changed);
    connect(m_seq, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_devices, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_lora, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    for (QComboBox* c : {m_checkpoint, m_precision, m_optimizer, m_zero, m_offload, m_capacity})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    for (QCheckBox* c : {m_flash, m_expandable})
        connect(c, &QCheckBox::toggled, this, changed);
    auto measuredChanged = [this] {
        if (m_updating)
            return;
        StatedConfig st = m_stated;
        st.microBatch = m_measuredB->value() > 0 ? std::optional<int>(m_measuredB->value()) : std::nullopt;
        st.seq = m_measuredS->value() > 0 ? std::optional<int>(m_measuredS->value()) : std::nullopt;
        st.precision = m_measuredP->currentIndex() > 0 ? std::optional<Precision>(Precision(m_measuredP->currentIndex() - 1))
                                                       : std::nullopt;
        st.devices = m_measuredD->value() > 0 ? std::optional<int>(m_measuredD->value()) : std::nullopt;
        setStated(st);
    };
    connect(m_measuredB, qOverload<int>(&QSpinBox::valueChanged), this, measuredChanged);
    connect(m_measuredS, qOverload<int>(&QSpinBox::valueChanged), this, measuredChanged);
    connect(m_measuredP, qOverload<int>(&QComboBox::currentIndexChanged), this, measuredChanged);
    connect(m_measuredD, qOverload<int>(&QSpinBox::valueChanged), this, measuredChanged);
    connect(m_fit, &QPushButton::clicked, this, [this] { rebuildLadder(); });
    connect(m_constantsButton, &QPushButton::clicked, this, [this] { editConstants(); });
    connect(m_addRunButton, &QPushButton::clicked, this, [this] {
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
    connect(m_compareButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("The Run That Followed"), QString(),
                                                          tr("Memory snapshots (*.pickle *.pkl *.gz *.hrt *.json);;All files (*)"));
        if (!path.isEmpty())
            compareWithRun(path);
    });
    connect(m_spendFirstCombo, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (m_updating)
            return;
        const int v = m_spendFirstCombo->itemData(index).toInt();
        setSpendFirst(v < 0 ? std::nullopt : std::optional<Currency>(Currency(v)));
    });
    connect(m_ladderList, &QListWidget::itemClicked, this, &WhatIfPanel::applyRung);
}

void WhatIfPanel::setTrace(std::shared_ptr<const LoadedTrace> trace, int deviceIndex,
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
    m_cal.reset();
    if (m_trace) {
        const int64_t cap = estimateCapacity(*m_trace, size_t(deviceIndex), std::nullopt).bytes;
        if (cap > 0)
            m_device = deviceForCapacity(cap);
    }
    recalibrate();
}

void WhatIfPanel::setAnalyticModel(const ModelDims& dims, const LeverConfig& config)
{
    m_trace.reset();
    m_analysis.reset();
    m_cal.reset();
    m_dims = dims;
    m_base = analyticBaseline(dims, config, m_k);
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
    m_updating = true;
    const int g = int(std::lround(double(bytes) / kGiB));
    int idx = m_capacity->findData(g);
    if (idx < 0) {
        m_capacity->addItem(QString::number(double(bytes) / kGiB, 'f', 1) + QStringLiteral(" GiB"), g);
        idx = m_capacity->count() - 1;
    }
    m_capacity->setCurrentIndex(idx);
    m_updating = false;
    recompute();
    rebuildLadder();
}

void WhatIfPanel::setConstants(const WhatIfConstants& k)
{
    m_k = k;
    if (m_trace) {
        const LeverConfig keep = m_config;
        recalibrate();
        if (m_haveBase)
            setConfig(keep);
    } else if (m_dims) {
        setAnalyticModel(*m_dims, m_config);
    }
}

void WhatIfPanel::setSpendFirst(std::optional<Currency> currency)
{
    m_spendFirst = currency;
    m_updating = true;
    m_spendFirstCombo->setCurrentIndex(std::max(0, m_spendFirstCombo->findData(currency ? int(*currency) : -1)));
    m_updating = false;
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
    m_stated = stated;
    if (m_trace)
        recalibrate();
}

void WhatIfPanel::recalibrate()
{
    m_error.clear();
    if (!m_trace || m_deviceIndex < 0 || size_t(m_deviceIndex) >= m_trace->snapshot.devices.size()) {
        m_haveBase = false;
        return;
    }
    try {
        if (!m_analysis)
            m_analysis = std::make_shared<const DeviceAnalysis>(analyzeDevice(*m_trace, size_t(m_deviceIndex)));
        m_cal = calibrate(*m_trace, size_t(m_deviceIndex), *m_analysis, m_stated, m_dims.value_or(ModelDims{}), m_k);
        if (!m_runs->runs().empty()) {
            std::vector<Calibration> runs{*m_cal};
            runs.insert(runs.end(), m_runs->runs().begin(), m_runs->runs().end());
            const MultiFit fit = fitCalibrationRuns(runs, m_k);
            m_cal->baseline = fit.baseline;
            m_runsText = fit.microBatchFit || fit.sequenceFit
                             ? tr("Fitted on %1 runs (this one and %2): largest residual %3%")
                                   .arg(fit.runs)
                                   .arg(m_runs->names().join(QStringLiteral(", ")))
                                   .arg(fit.residual * 100, 0, 'f', 1)
                             : tr("The added runs differ in neither micro-batch alone nor sequence alone: not used");
        }
        m_base = m_cal->baseline;
        m_haveBase = true;
        m_config = m_base.config;
        QStringList lines;
        for (const auto& m : m_cal->measured)
            if (m.key != "optimizer_bytes")
                lines << QStringLiteral("%1 = %2 <i>(%3)</i>")
                             .arg(QString::fromStdString(m.key), m.value.empty() ? QStringLiteral("?") : QString::fromStdString(m.value),
                                  QString::fromStdString(m.how));
        if (!m_runsText.isEmpty())
            lines << m_runsText;
        m_measuredInfo->setText(lines.join(QStringLiteral("<br>")));
    } catch (const std::exception& e) {
        m_error = QString::fromUtf8(e.what());
        m_haveBase = false;
    }
    writeControls();
    recompute();
    rebuildLadder();
}

void WhatIfPanel::readControls()
{
    LeverConfig c = m_config;
    c.microBatch = m_microBatch->value();
    c.accum = m_accum->value();
    c.seq = m_seq->value();
    int every = 1;
    checkpointFromName(m_checkpoint->currentText().toStdString(), c.checkpoint, every);
    c.checkpointEvery = every;
    c.precision = Precision(m_precision->currentIndex());
    c.optimizer = OptimizerKind(m_optimizer->currentIndex());
    c.zero = m_zero->currentIndex();
    c.devices = m_devices->value();
    c.offload = Offload(m_offload->currentIndex());
    c.trainableFraction = m_lora->value();
    c.flashAttention = m_flash->isChecked();
    c.expandableSegments = m_expandable->isChecked();
    const int g = m_capacity->currentData().toInt();
    if (g > 0 && std::llabs(int64_t(g * kGiB) - m_device.capacityBytes) > int64_t(kGiB / 2))
        m_device = deviceForCapacity(int64_t(g * kGiB));
    // A lever whose measured value is unknown is locked (lockUnknownLevers): it stays as
    // measured, whatever its widget shows (a spin box cannot show "unknown" devices).
    if (m_cal) {
        const LeverConfig& b = m_base.config;
        if (!m_cal->known("micro_batch"))
            c.microBatch = b.microBatch;
        if (!m_cal->known("seq"))
            c.seq = b.seq;
        if (!m_cal->known("precision"))
            c.precision = b.precision;
        if (!m_cal->known("devices")) {
            c.devices = b.devices;
            c.zero = b.zero;
        }
    }
    m_config = c;
}

void WhatIfPanel::writeControls()
{
    m_updating = true;
    const LeverConfig& c = m_config;
    m_microBatch->setValue(std::max(1, c.microBatch));
    m_accum->setValue(std::max(1, c.accum));
    m_seq->setValue(c.seq);
    m_checkpoint->setCurrentText(QString::fromStdString(std::string(checkpointName(c.checkpoint, c.checkpointEvery))));
    m_precision->setCurrentIndex(int(c.precision));
    m_optimizer->setCurrentIndex(int(c.optimizer));
    m_zero->setCurrentIndex(c.zero);
    m_devices->setValue(std::max(1, c.devices));
    m_offload->setCurrentIndex(int(c.offload));
    m_lora->setValue(c.trainableFraction);
    m_flash->setChecked(c.flashAttention);
    m_expandable->setChecked(c.expandableSegments);
    m_measuredInfo->parentWidget()->setVisible(m_trace != nullptr);
    m_measuredB->setValue(m_stated.microBatch.value_or(0));
    m_measuredS->setValue(m_stated.seq.value_or(0));
    m_measuredP->setCurrentIndex(m_stated.precision ? int(*m_stated.precision) + 1 : 0);
    m_measuredD->setValue(m_stated.devices.value_or(0));
    m_microBatchLabel->setText(QString::number(c.microBatch ? c.microBatch : 1) + (c.microBatch ? QString() : QStringLiteral("?")));
    m_accumLabel->setText(QString::number(c.accum));
    lockUnknownLevers();
    m_updating = false;
}

void WhatIfPanel::lockUnknownLevers()
{
    struct Lever {
        QWidget* widget;
        const char* key;
        QString field;
    };
    const Lever levers[] = {{m_microBatch, "micro_batch", tr("micro-batch")},
                            {m_seq, "seq", tr("sequence")},
                            {m_precision, "precision", tr("precision")},
                            {m_devices, "devices", tr("devices")},
                            {m_zero, "devices", tr("devices")}};
    for (const Lever& l : levers) {
        const bool locked = m_cal && !m_cal->known(l.key);
        l.widget->setEnabled(!locked);
        l.widget->setToolTip(locked ? tr("The trace does not tell the %1 it was measured at: set it under "
                                         "<i>Measured at</i> to move this lever (headroom-cli asks for the same)")
                                          .arg(l.field)
                                    : QString());
    }
    if (m_cal && !m_cal->known("micro_batch"))
        m_microBatchLabel->setText(QStringLiteral("?"));
}

void WhatIfPanel::setConfig(const LeverConfig& config)
{
    m_config = config;
    writeControls();
    recompute();
}

void WhatIfPanel::recompute()
{
    m_microBatchLabel->setText(m_config.microBatch > 0 ? QString::number(m_config.microBatch) : QStringLiteral("?"));
    m_accumLabel->setText(QString::number(m_config.accum));
    if (!m_haveBase) {
        m_summary->setText(m_error.isEmpty() ? tr("Open a trace or choose a model.") : QStringLiteral("<b>%1</b>").arg(m_error.toHtmlEscaped()));
        return;
    }
    QString missing;
    if (m_cal) {
        try {
            m_cal->require(m_config);
        } catch (const WhatIfMissingValue& e) {
            const QString field = e.key == "micro_batch" ? tr("micro-batch")
                                  : e.key == "seq"       ? tr("sequence")
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
        emit configChanged();
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    m_projection = project(m_base, m_config, m_k, m_device);
    m_lastRecomputeUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    m_measured = project(m_base, m_base.config, m_k, m_device);
    m_chart->set(m_cal ? &m_measured : nullptr, m_projection);
    const Projection& p = m_projection;
    const QString color = p.verdict == Verdict::Fits ? QStringLiteral("#2e7d32")
                          : p.verdict == Verdict::Tight ? QStringLiteral("#ef6c00")
                                                        : QStringLiteral("#c62828");
    QString s = QStringLiteral("<b>Peak %1</b> (%2 .. %3) in the %4 &mdash; <b style='color:%5'>%6</b> on %7<br>")
                    .arg(projected(p.peak), projected(p.peakLow), projected(p.peakHigh),
                         QString::fromStdString(std::string(stepPhaseLabel(p.peakPhase))), color,
                         QString::fromStdString(std::string(verdictName(p.verdict))), QString::fromStdString(m_device.name));
    if (p.config.microBatch > 0 && p.config.seq > 0 && p.config.devices > 0)
        s += tr("Step time <b>%1 s</b> (x%2), %3 tokens/s; effective batch %4")
                 .arg(p.time.total, 0, 'f', 3)
                 .arg(p.time.relative, 0, 'f', 2)
                 .arg(p.time.tokensPerSecond, 0, 'f', 0)
                 .arg(p.config.effectiveBatch());
    else
        s += tr("Step time <b>%1 s</b> (x%2); tokens/s and the effective batch need the measured micro-batch, "
                "sequence and devices (<i>Measured at</i>)")
                 .arg(p.time.total, 0, 'f', 3)
                 .arg(p.time.relative, 0, 'f', 2);
    QStringList items;
    auto item = [&](const char* name, double v) {
        if (v > 1e-6)
            items << QStringLiteral("%1 %2 s").arg(QString::fromLatin1(name)).arg(v, 0, 'f', 3);
    };
    item("compute", p.time.compute);
    item("utilisation", p.time.utilisation);
    item("recompute", p.time.recompute);
    item("communication", p.time.communication);
    item("offload", p.time.offload);
    item("optimizer", p.time.optimizer);
    s += QStringLiteral("<br><small>") + items.join(QStringLiteral(", ")) + QStringLiteral(" &middot; MFU %1 [guess], overlap %2 [guess]</small>")
             .arg(m_k.mfuMax).arg(m_k.overlap);
    m_summary->setText(s);
    QStringList notes;
    for (const auto& n : p.notes)
        notes << QString::fromStdString(n);
    m_notes->setText(notes.join(QStringLiteral("\n")));
    emit configChanged();
    emit settingsChanged(settingsJson());
}

void WhatIfPanel::rebuildLadder()
{
    m_ladderList->clear();
    if (!m_haveBase)
        return;
    LadderOptions lo;
    lo.outlierBatch = m_cal && m_cal->outlierBatch;
    lo.availableDevices = std::max(1, m_config.devices);
    if (m_spendFirst) {
        lo.currencyOrder = {*m_spendFirst};
        for (Currency cur : {Currency::Engineering, Currency::Throughput, Currency::Hardware, Currency::Fidelity})
            if (cur != *m_spendFirst)
                lo.currencyOrder.push_back(cur);
    }
    m_ladder = buildLadder(m_base, m_config, m_k, m_device, lo);
    for (const auto& w : m_ladder.warnings)
        m_ladderList->addItem(QStringLiteral("! ") + QString::fromStdString(w));
    if (m_ladder.fitsAsIs)
        m_ladderList->addItem(tr("It fits as it is."));
    for (size_t i = 0; i < m_ladder.rungs.size(); ++i) {
        const Rung& r = m_ladder.rungs[i];
        QString text = QStringLiteral("%1. %2 -> %3 (high %4), %5, %6 s/step\n    %7")
                           .arg(i + 1)
                           .arg(QString::fromStdString(r.title), projected(r.projection.peak), projected(r.projection.peakHigh),
                                QString::fromStdString(std::string(verdictName(r.projection.verdict))))
                           .arg(r.projection.time.total, 0, 'f', 2)
                           .arg(rungCosts(r));
        for (const auto& w : r.warnings)
            text += QStringLiteral("\n    ! ") + QString::fromStdString(w);
        auto* it = new QListWidgetItem(text, m_ladderList);
        it->setData(Qt::UserRole, int(i));
        if (r.projection.fits)
            it->setForeground(QColor(0x2e, 0x7d, 0x32));
    }
    if (!m_ladder.fitsAsIs && m_ladder.firstFit < 0)
        m_ladderList->addItem(tr("No rung fits: see the alternatives by currency (headroom-cli ladder)."));
}

void WhatIfPanel::addCalibrationRun(const QString& path)
{
    m_runsText.clear();
    m_runs->add(path, m_stated, m_k);
}

WhatIfVerifyDialog* WhatIfPanel::compareWithRun(const QString& path)
{
    if (!m_cal || !m_haveBase)
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
    auto* dialog = new WhatIfVerifyDialog(m_base, m_config, moved, m_k, m_device, path, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
    return dialog;
}

void WhatIfPanel::applyRung(QListWidgetItem* item)
{
    const QVariant v = item ? item->data(Qt::UserRole) : QVariant();
    if (!v.isValid())
        return;
    const int i = v.toInt();
    if (i < 0 || size_t(i) >= m_ladder.rungs.size())
        return;
    setConfig(m_ladder.rungs[size_t(i)].config);
    emit rungApplied(i);
}

WhatIfSettings WhatIfPanel::settings() const
{
    WhatIfSettings st;
    st.config = m_config;
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
    m_spendFirst = st->spendFirst;
    m_updating = true;
    m_spendFirstCombo->setCurrentIndex(std::max(0, m_spendFirstCombo->findData(m_spendFirst ? int(*m_spendFirst) : -1)));
    m_updating = false;
    if (m_trace)
        setStated(st->stated);
    if (st->capacityBytes > 0 && st->capacityBytes != m_device.capacityBytes)
        m_device = deviceForCapacity(st->capacityBytes);
    setConfig(st->config);
    return true;
}

QString WhatIfPanel::markdown() const
{
    if (!m_haveBase)
        return tr("_No what-if projection: %1_\n").arg(m_error.isEmpty() ? tr("no trace or model.") : m_error);
    return whatIfMarkdown(m_projection, m_ladder, m_cal ? &*m_cal : nullptr, m_device);
}

} // namespace headroom
