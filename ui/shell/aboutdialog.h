// SPDX-License-Identifier: MIT
#pragma once

#include <QDialog>

namespace headroom {

/// Help ▸ About Headroom: the version, the commit, the Qt it runs on, and the libraries
/// with their licences.
class AboutDialog : public QDialog {
    Q_OBJECT
public:
    explicit AboutDialog(QWidget* parent = nullptr);

    /// The libraries table as HTML (the dialog's text; also for tests).
    static QString librariesHtml();
};

} // namespace headroom
