// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/vocabulary/whatifmodel.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSlider;
class QFormLayout;
class QGroupBox;
class QSpinBox;
class QToolButton;

namespace headroom {

/// The what-if panel's left column: the levers, the capacity and the values the run was
/// measured at. It shows and reads; the panel decides what a change means.
class WhatIfLeverForm : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfLeverForm(QWidget* parent = nullptr);

    /// The levers as the widgets show them, over `base` for what the form has no widget for.
    LeverConfig levers(const LeverConfig& base) const;
    /// Shows `config` (no signal). A lever whose measured value `cal` does not know is locked,
    /// with the reason: it cannot move until the value is given (as the CLI refuses it). A
    /// micro-batch counted in ratios (core/whatif/calibration/batchratio.h) moves, labelled as ratios; an
    /// unknown sequence is typed in place: the Sequence field then edits the measured value.
    void showLevers(const LeverConfig& config, const Calibration* cal);
    /// The micro-batch and accumulation read-outs beside the sliders (a count, or a ratio of the
    /// measured run). Clicking the micro-batch's edits the measured micro-batch in place.
    void showCounts(const LeverConfig& config);

    /// What the user set under "Measured at", over `base`.
    StatedConfig stated(const StatedConfig& base) const;
    void showStated(const StatedConfig& stated, bool haveTrace);
    /// How each measured value is known (the folded list, with `runsText` about added
    /// calibration runs), and in each field the user left unstated what the calibration made
    /// of it ("2 (read)", "fp32 (assumed)") instead of "unknown".
    void showMeasured(const std::vector<MeasuredItem>& measured, const QString& runsText);

    /// The chosen capacity in bytes (0: unknown).
    int64_t capacityBytes() const;
    void showCapacity(int64_t bytes);

    /// Adds `extra` (the allocator section) below the capacity.
    void addSection(QWidget* extra);

signals:
    void leversChanged();
    void statedChanged();
    void addRunRequested();

private:
    void buildLevers(QFormLayout* form);
    QWidget* buildMicroBatch();
    QGroupBox* buildMeasured();
    void connectFields();
    /// Clicking the micro-batch's read-out: a spin box in its place takes the measured value.
    void editMeasuredMicroBatch();
    void lockUnknown(const Calibration* cal);
    QSlider* m_microBatch = nullptr;
    QSlider* m_accum = nullptr;
    QPushButton* m_microBatchLabel = nullptr;
    QSpinBox* m_microBatchInPlace = nullptr; ///< the measured micro-batch, typed beside the slider
    int m_microBatchUnits = 0;               ///< > 0: the slider counts ratios of the measured run
    bool m_seqTypesMeasured = false;         ///< the Sequence field edits the measured sequence
    QLabel* m_accumLabel = nullptr;
    QSpinBox* m_seq = nullptr;
    QComboBox* m_checkpoint = nullptr;
    QComboBox* m_precision = nullptr;
    QComboBox* m_optimizer = nullptr;
    QComboBox* m_zero = nullptr;
    QSpinBox* m_devices = nullptr;
    QComboBox* m_offload = nullptr;
    QCheckBox* m_flash = nullptr;
    QDoubleSpinBox* m_lora = nullptr;
    QComboBox* m_capacity = nullptr;
    QWidget* m_measuredBox = nullptr;
    QSpinBox* m_measuredB = nullptr;
    QSpinBox* m_measuredS = nullptr;
    QSpinBox* m_measuredD = nullptr;
    QComboBox* m_measuredP = nullptr;
    QLabel* m_measuredInfo = nullptr;
    QToolButton* m_measuredInfoToggle = nullptr;
    QPushButton* m_addRunButton = nullptr;
    bool m_updating = false;
};

} // namespace headroom
