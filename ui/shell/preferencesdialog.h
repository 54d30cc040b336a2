// SPDX-License-Identifier: MIT
#pragma once

#include "ui/shell/preferences.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;

namespace headroom {

/// Settings ▸ Preferences: units, theme, the default device capacity and automatic
/// reloading. It edits a copy; preferences() is what the user accepted.
class PreferencesDialog : public QDialog {
    Q_OBJECT
public:
    explicit PreferencesDialog(const Preferences& current, QWidget* parent = nullptr);

    /// The edited values (valid when the dialog was accepted).
    Preferences preferences() const;

private:
    void show(const Preferences& p);
    void validate();

    QComboBox* m_units;
    QComboBox* m_theme;
    QComboBox* m_capacity;
    QLabel* m_capacityError;
    QCheckBox* m_autoReload;
    QDialogButtonBox* m_buttons;
};

} // namespace headroom
