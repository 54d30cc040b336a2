// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/vocabulary/whatifmodel.h"

#include <QDialog>

class QTableWidget;

namespace headroom {

/// Every constant of the what-if model (WhatIfConstants::entries()) with its value, unit,
/// source and whether it is a guess, editable in place; "Restore defaults" puts the built-in
/// values back. Invalid or negative numbers are refused with the row named.
class WhatIfConstantsDialog : public QDialog {
    Q_OBJECT
public:
    explicit WhatIfConstantsDialog(const WhatIfConstants& constants, QWidget* parent = nullptr);

    /// The edited constants; valid after the dialog was accepted.
    const WhatIfConstants& constants() const { return m_constants; }
    QTableWidget* table() const { return m_table; }
    /// Reads the table; false (and an explanation) when a value is not a non-negative number.
    bool readTable(QString* error);

private:
    void fill(const WhatIfConstants& k);

    WhatIfConstants m_constants;
    QTableWidget* m_table;
};

} // namespace headroom
