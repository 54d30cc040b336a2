// SPDX-License-Identifier: MIT
#include "ui/whatif/whatifleverform.h"

#include "core/whatif/calibration/batchratio.h"
#include "ui/plot/categorystyle.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {
constexpr double kGiB = double(1ull << 30);
}

WhatIfLeverForm::WhatIfLeverForm(QWidget* parent) : QWidget(parent)
{
    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    // What the trace cannot tell comes first: until it is filled, the levers it unlocks wait.
    form->addRow(buildMeasured());
    buildLevers(form);
    connectFields();
}

namespace {

/// "-" and "+" beside a slider, one stop each: the levers' column is narrow (about 75 px of
/// slider in the default window, 12 ratio stops or 64 counts), so a drag cannot land on a
/// stop a person means; the buttons (and the arrow keys on the slider) can.
void addStepButtons(QHBoxLayout* row, QSlider* slider, const QString& what)
{
    for (int dir : {-1, +1}) {
        auto* b = new QToolButton(row->parentWidget());
        b->setText(dir < 0 ? QStringLiteral("\u2212") : QStringLiteral("+"));
        b->setObjectName(slider->objectName() + (dir < 0 ? QStringLiteral("Down") : QStringLiteral("Up")));
        b->setAutoRaise(true);
        b->setAutoRepeat(true);
        b->setFixedWidth(b->fontMetrics().horizontalAdvance(QStringLiteral("+")) * 2 + 6); // leave the slider its room
        b->setToolTip(dir < 0 ? WhatIfLeverForm::tr("One %1 stop down").arg(what)
                              : WhatIfLeverForm::tr("One %1 stop up").arg(what));
        QObject::connect(b, &QToolButton::clicked, slider, [slider, dir] {
            slider->triggerAction(dir < 0 ? QAbstractSlider::SliderSingleStepSub : QAbstractSlider::SliderSingleStepAdd);
        });
        QObject::connect(slider, &QSlider::rangeChanged, b, [b, slider, dir] {
            b->setEnabled(dir < 0 ? slider->value() > slider->minimum() : slider->value() < slider->maximum());
        });
        QObject::connect(slider, &QSlider::valueChanged, b, [b, slider, dir](int v) {
            b->setEnabled(dir < 0 ? v > slider->minimum() : v < slider->maximum());
        });
        row->addWidget(b);
    }
}

} // namespace

QWidget* WhatIfLeverForm::buildMicroBatch()
{
    auto* w = new QWidget(this);
    auto* h = new QHBoxLayout(w);
    h->setContentsMargins(0, 0, 0, 0);
    m_microBatch = new QSlider(Qt::Horizontal, w);
    m_microBatch->setObjectName(QStringLiteral("microBatchLever"));
    m_microBatch->setRange(1, 64); // a count; in ratios, an index into kBatchRatioSteps
    m_microBatchLabel = new QPushButton(QStringLiteral("1"), w);
    m_microBatchLabel->setObjectName(QStringLiteral("microBatchValue"));
    m_microBatchLabel->setFlat(true);
    // Fixed: a push button's own minimum width (the style's) would take the slider's room.
    m_microBatchLabel->setFixedWidth(m_microBatchLabel->fontMetrics().horizontalAdvance(QStringLiteral("x1/16")) + 10);
    m_microBatchInPlace = new QSpinBox(w);
    m_microBatchInPlace->setObjectName(QStringLiteral("microBatchInPlace"));
    m_microBatchInPlace->setRange(1, 4096);
    m_microBatchInPlace->setKeyboardTracking(false);
    m_microBatchInPlace->setToolTip(tr("The micro-batch the run was measured at (the same field as under <i>Measured at</i>)"));
    m_microBatchInPlace->hide();
    h->setSpacing(2);
    h->addWidget(m_microBatch, 1);
    addStepButtons(h, m_microBatch, tr("micro-batch"));
    h->addWidget(m_microBatchLabel);
    h->addWidget(m_microBatchInPlace);
    return w;
}

void WhatIfLeverForm::buildLevers(QFormLayout* form)
{
    auto slider = [&](QSlider*& s, QLabel*& l, int max, const QString& name, const QString& objectName) {
        auto* w = new QWidget(this);
        auto* h = new QHBoxLayout(w);
        h->setContentsMargins(0, 0, 0, 0);
        s = new QSlider(Qt::Horizontal, w);
        s->setObjectName(objectName);
        s->setRange(1, max);
        l = new QLabel(QStringLiteral("1"), w);
        l->setMinimumWidth(l->fontMetrics().horizontalAdvance(QStringLiteral("64")) + 6);
        h->setSpacing(2);
        h->addWidget(s, 1);
        addStepButtons(h, s, name);
        h->addWidget(l);
        return w;
    };
    form->addRow(tr("Micro-batch"), buildMicroBatch());
    form->addRow(tr("Accumulation"), slider(m_accum, m_accumLabel, 64, tr("accumulation"), QStringLiteral("accumLever")));
    m_seq = new QSpinBox(this);
    m_seq->setObjectName(QStringLiteral("seqLever"));
    m_seq->setRange(0, 1 << 20);
    m_seq->setKeyboardTracking(false); // a typed length projects (or recalibrates) once, when entered
    m_seq->setSpecialValueText(tr("unknown"));
    form->addRow(tr("Sequence"), m_seq);
    auto combo = [&](std::initializer_list<const char*> items) {
        auto* c = new QComboBox(this);
        for (const char* item : items)
            c->addItem(QString::fromLatin1(item));
        return c;
    };
    m_checkpoint = combo({"none", "selective", "every:4", "every:2", "full"});
    form->addRow(tr("Checkpointing"), m_checkpoint);
    m_precision = combo({"fp32", "amp-bf16", "amp-fp16", "bf16"});
    form->addRow(tr("Precision"), m_precision);
    m_optimizer = combo({"adamw", "adamw-fused", "adam8bit", "adafactor", "sgd", "sgd-momentum"});
    form->addRow(tr("Optimizer"), m_optimizer);
    m_zero = combo({"none (DDP)", "ZeRO-1", "ZeRO-2", "ZeRO-3 / FSDP"});
    form->addRow(tr("Sharding"), m_zero);
    m_devices = new QSpinBox(this);
    m_devices->setObjectName(QStringLiteral("devicesLever"));
    m_devices->setRange(1, 4096);
    form->addRow(tr("Devices"), m_devices);
    m_offload = combo({"none", "optimizer", "params"});
    form->addRow(tr("CPU offload"), m_offload);
    m_lora = new QDoubleSpinBox(this);
    m_lora->setRange(0.0001, 1.0);
    m_lora->setDecimals(4);
    m_lora->setSingleStep(0.01);
    form->addRow(tr("Trainable fraction"), m_lora);
    m_flash = new QCheckBox(tr("FlashAttention"), this); // fits the levers column; the tool tip says the rest
    m_flash->setToolTip(tr("FlashAttention or fused scaled-dot-product attention: no b*s^2 attention scores stored"));
    form->addRow(QString(), m_flash);
    // The file's capacity, shared with every view (Explorer): "unknown" until the file or the
    // user tells it, so that no verdict is judged against a card nobody chose.
    m_capacity = new QComboBox(this);
    m_capacity->setObjectName(QStringLiteral("whatifCapacity"));
    m_capacity->addItem(tr("unknown"), qlonglong(0));
    for (int g : {24, 40, 48, 80, 94, 141})
        m_capacity->addItem(QString::number(g) + QStringLiteral(" GiB"), qlonglong(g) << 30);
    m_capacity->setToolTip(tr("The device the projection is judged against; the timeline, the Diagnosis and "
                              "the report judge the file against it too"));
    form->addRow(tr("Capacity"), m_capacity);

}

QGroupBox* WhatIfLeverForm::buildMeasured()
{
    auto* measuredBox = new QGroupBox(tr("Measured at"), this);
    m_measuredBox = measuredBox;
    auto* mf = new QFormLayout(measuredBox);
    auto unknownSpin = [&](const char* name, int max) {
        auto* s = new QSpinBox(measuredBox);
        s->setObjectName(QString::fromLatin1(name));
        s->setRange(0, max);
        s->setSpecialValueText(tr("unknown"));
        return s;
    };
    m_measuredB = unknownSpin("measuredMicroBatch", 4096);
    m_measuredS = unknownSpin("measuredSeq", 1 << 20);
    m_measuredD = unknownSpin("measuredDevices", 65536);
    m_measuredP = new QComboBox(measuredBox);
    m_measuredP->setObjectName(QStringLiteral("measuredPrecision"));
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
    // How each value is known, folded: unfolded it is a dozen lines that would push the levers
    // below the fold of the default window.
    m_measuredInfoToggle = new QToolButton(measuredBox);
    m_measuredInfoToggle->setObjectName(QStringLiteral("measuredInfoToggle"));
    m_measuredInfoToggle->setCheckable(true);
    m_measuredInfoToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_measuredInfoToggle->setArrowType(Qt::RightArrow);
    m_measuredInfoToggle->setAutoRaise(true);
    m_measuredInfoToggle->setText(tr("How each value is known"));
    mf->addRow(m_measuredInfoToggle);
    m_measuredInfo = new QLabel(measuredBox);
    m_measuredInfo->setObjectName(QStringLiteral("measuredInfo"));
    m_measuredInfo->setWordWrap(true);
    m_measuredInfo->hide();
    mf->addRow(m_measuredInfo);
    connect(m_measuredInfoToggle, &QToolButton::toggled, this, [this](bool open) {
        m_measuredInfo->setVisible(open);
        m_measuredInfoToggle->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
    });
    return measuredBox;

}

void WhatIfLeverForm::connectFields()
{
    auto changed = [this] {
        if (!m_updating)
            emit leversChanged();
    };
    connect(m_microBatch, &QSlider::valueChanged, this, changed);
    connect(m_accum, &QSlider::valueChanged, this, changed);
    connect(m_seq, qOverload<int>(&QSpinBox::valueChanged), this, [this, changed](int v) {
        if (m_seqTypesMeasured) {
            if (!m_updating)
                m_measuredS->setValue(v); // its own signal recalibrates
        } else {
            changed();
        }
    });
    connect(m_microBatchLabel, &QPushButton::clicked, this, &WhatIfLeverForm::editMeasuredMicroBatch);
    connect(m_microBatchInPlace, &QSpinBox::editingFinished, this, [this] {
        if (!m_microBatchInPlace->isVisible())
            return;
        m_microBatchInPlace->hide();
        m_microBatchLabel->show();
        m_measuredB->setValue(m_microBatchInPlace->value()); // its own signal recalibrates
    });
    connect(m_devices, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(m_lora, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    for (QComboBox* c : {m_checkpoint, m_precision, m_optimizer, m_zero, m_offload, m_capacity})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_flash, &QCheckBox::toggled, this, changed);
    auto measuredChanged = [this] {
        if (!m_updating)
            emit statedChanged();
    };
    for (QSpinBox* s : {m_measuredB, m_measuredS, m_measuredD})
        connect(s, qOverload<int>(&QSpinBox::valueChanged), this, measuredChanged);
    connect(m_measuredP, qOverload<int>(&QComboBox::currentIndexChanged), this, measuredChanged);
    connect(m_addRunButton, &QPushButton::clicked, this, &WhatIfLeverForm::addRunRequested);
}

void WhatIfLeverForm::addSection(QWidget* extra)
{
    // Below the capacity it answers for ("Measured at" stays at the top).
    extra->setParent(this);
    static_cast<QFormLayout*>(layout())->addRow(extra);
}

LeverConfig WhatIfLeverForm::levers(const LeverConfig& base) const
{
    LeverConfig c = base;
    c.microBatch = m_microBatchUnits > 0 ? kBatchRatioSteps[size_t(m_microBatch->value())] : m_microBatch->value();
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
    return c;
}

void WhatIfLeverForm::showLevers(const LeverConfig& c, const Calibration* cal)
{
    m_updating = true;
    lockUnknown(cal);
    if (m_microBatchUnits > 0) {
        m_microBatch->setRange(0, int(kBatchRatioSteps.size()) - 1);
        m_microBatch->setValue(int(batchRatioStep(c.microBatch)));
    } else {
        m_microBatch->setRange(1, 64);
        m_microBatch->setValue(std::max(1, c.microBatch));
    }
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
    showCounts(c);
    m_updating = false;
}

void WhatIfLeverForm::lockUnknown(const Calibration* cal)
{
    struct Lever {
        QWidget* widget;
        const char* key;
        QString field;
    };
    const Lever levers[] = {{m_microBatch, "micro_batch", tr("micro-batch")},
                            {m_precision, "precision", tr("precision")},
                            {m_devices, "devices", tr("devices")},
                            {m_zero, "devices", tr("devices")}};
    m_microBatchUnits = cal ? cal->baseline.microBatchUnits : 0;
    for (const Lever& l : levers) {
        const bool ratio = l.widget == m_microBatch && m_microBatchUnits > 0;
        const bool locked = cal && !cal->known(l.key) && !ratio;
        l.widget->setEnabled(!locked);
        l.widget->setToolTip(locked ? tr("The trace does not tell the %1 it was measured at: set it under "
                                         "<i>Measured at</i> to move this lever (headroom-cli asks for the same)")
                                          .arg(l.field)
                              : ratio ? tr("The trace does not tell the micro-batch it was measured at: the slider "
                                           "moves in ratios of the measured run (x1/4 .. x16). Click the value to "
                                           "type the measured micro-batch.")
                                      : QString());
    }
    m_seqTypesMeasured = cal && !cal->known("seq");
    m_seq->setSpecialValueText(m_seqTypesMeasured ? tr("unknown: type it") : tr("unknown"));
    m_seq->setToolTip(m_seqTypesMeasured
                          ? tr("The trace does not tell the sequence length it was measured at, and the sequence "
                               "lever needs it: a b*h*s^2 score and a b*s*4d activation have the same size at some "
                               "lengths. Type the measured length here; the lever then moves from it.")
                          : QString());
    m_microBatchLabel->setToolTip(tr("Click to type the micro-batch the run was measured at"));
}

void WhatIfLeverForm::showCounts(const LeverConfig& c)
{
    m_microBatchLabel->setText(c.microBatch > 0 ? QString::fromStdString(microBatchText(c.microBatch, m_microBatchUnits))
                                                : QStringLiteral("?"));
    m_accumLabel->setText(QString::number(c.accum));
}

void WhatIfLeverForm::editMeasuredMicroBatch()
{
    m_microBatchInPlace->setValue(std::max(1, m_measuredB->value()));
    m_microBatchLabel->hide();
    m_microBatchInPlace->show();
    m_microBatchInPlace->setFocus();
    m_microBatchInPlace->selectAll();
}

StatedConfig WhatIfLeverForm::stated(const StatedConfig& base) const
{
    StatedConfig st = base;
    st.microBatch = m_measuredB->value() > 0 ? std::optional<int>(m_measuredB->value()) : std::nullopt;
    st.seq = m_measuredS->value() > 0 ? std::optional<int>(m_measuredS->value()) : std::nullopt;
    st.precision = m_measuredP->currentIndex() > 0 ? std::optional<Precision>(Precision(m_measuredP->currentIndex() - 1))
                                                   : std::nullopt;
    st.devices = m_measuredD->value() > 0 ? std::optional<int>(m_measuredD->value()) : std::nullopt;
    return st;
}

void WhatIfLeverForm::showStated(const StatedConfig& s, bool haveTrace)
{
    m_updating = true;
    m_measuredBox->setVisible(haveTrace);
    m_measuredB->setValue(s.microBatch.value_or(0));
    m_measuredS->setValue(s.seq.value_or(0));
    m_measuredP->setCurrentIndex(s.precision ? int(*s.precision) + 1 : 0);
    m_measuredD->setValue(s.devices.value_or(0));
    m_updating = false;
}

void WhatIfLeverForm::showMeasured(const std::vector<MeasuredItem>& measured, const QString& runsText)
{
    QStringList lines;
    for (const auto& m : measured) {
        if (m.key == "optimizer_bytes")
            continue;
        QString line = m.value.empty() ? tr("%1 <i>unknown</i>").arg(QString::fromStdString(m.key))
                                       : QStringLiteral("%1 = %2 <i>(%3)</i>")
                                             .arg(QString::fromStdString(m.key), QString::fromStdString(m.value),
                                                  QString::fromStdString(m.how));
        // The evidence, as headroom-cli whatif prints it: what a value was read from, or why
        // it could not be.
        if (!m.detail.empty())
            line += QStringLiteral(" <span style=\"color:gray\">%1</span>")
                        .arg(QString::fromStdString(m.detail).toHtmlEscaped());
        lines << line;
    }
    if (!runsText.isEmpty())
        lines << runsText;
    m_measuredInfo->setText(lines.join(QStringLiteral("<br>")));

    auto textFor = [&](const char* key) {
        for (const MeasuredItem& m : measured)
            if (m.key == key && !m.value.empty() && m.how != "unknown")
                return tr("%1 (%2)").arg(QString::fromStdString(m.value), QString::fromStdString(m.how));
        return tr("unknown");
    };
    m_measuredB->setSpecialValueText(textFor("micro_batch"));
    m_measuredS->setSpecialValueText(textFor("seq"));
    m_measuredD->setSpecialValueText(textFor("devices"));
    m_measuredP->setItemText(0, textFor("precision"));
}

int64_t WhatIfLeverForm::capacityBytes() const { return m_capacity->currentData().toLongLong(); }

void WhatIfLeverForm::showCapacity(int64_t bytes)
{
    m_updating = true;
    bytes = std::max<int64_t>(0, bytes);
    int idx = m_capacity->findData(qlonglong(bytes));
    if (idx < 0) { // a capacity the file tells (an OOM record's): named by its size, not rounded
        m_capacity->addItem(formatBytesQ(bytes, 1), qlonglong(bytes));
        idx = m_capacity->count() - 1;
    }
    m_capacity->setCurrentIndex(idx);
    m_updating = false;
}

} // namespace headroom
