// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/query/whatifsession.h"

#include <QDialog>

#include <memory>

class QLabel;
class QTableWidget;

namespace headroom {

/// "Compare with a measured run": the what-if panel's projection for the run that followed,
/// against that run's measured peak, term by term (the GUI of `whatif --verify`). The run is
/// loaded and read off the GUI thread; the dialog shows progress until it is in.
class WhatIfVerifyDialog : public QDialog {
    Q_OBJECT
public:
    /// `moved`: the levers the user set in the panel; the others come from AFTER's file.
    /// `before` projects `target` (in its ratio units) to AFTER's device `deviceIndex` (the
    /// position the panel projects, as `whatif --verify` takes it).
    WhatIfVerifyDialog(std::shared_ptr<const WhatIfSession> before, const LeverConfig& target, const LeverMask& moved,
                       const DeviceSpec& device, size_t deviceIndex, const QString& afterPath,
                       QWidget* parent = nullptr);
    ~WhatIfVerifyDialog() override;

    bool finished() const { return m_done; }
    /// Valid once finished() and no error.
    const Verification& verification() const { return m_result; }
    QString error() const { return m_error; }

signals:
    void verified();

private:
    void present(const Verification& v);

    QLabel* m_summary;
    QTableWidget* m_terms;
    Verification m_result;
    QString m_error;
    bool m_done = false;
};

} // namespace headroom
