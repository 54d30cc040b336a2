// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/usercategories.h"
#include "ui/explorer/explorerdata.h"

#include <QDialog>

#include <memory>
#include <optional>

class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QTableWidget;

namespace headroom {

/// Settings ▸ Your Categories: the user's category rules (core/analysis/usercategories.h) as
/// JSON, tested against the open file before they are applied: what each rule claims at the
/// peak, or the error that names the rule. Open and Save As read and write a rules file (the
/// one `headroom-cli analyze --categories` takes).
class UserCategoriesDialog : public QDialog {
    Q_OBJECT
public:
    /// `fileOnly`: the rules shown are the open file's own (the "only for this file" box starts
    /// ticked); without an open file the box is disabled.
    UserCategoriesDialog(const QString& rulesText, ExplorerDataPtr data, QWidget* parent = nullptr,
                         bool fileOnly = false);

    /// The rules as written; empty: none.
    QString rulesText() const;
    /// The parsed rules when the text is valid (an empty text gives none).
    std::shared_ptr<const UserCategories> rules() const { return m_rules; }

    /// Parses the text and, with a file open, shows what each rule claims at its peak.
    /// False (the error shown) when the text is not a valid rules file.
    bool test();
    bool openFile(const QString& path);
    bool saveFile(const QString& path);

    /// Whether the rules are to be the open file's own rather than the default.
    bool forThisFileOnly() const;

    void accept() override;

private:
    void showGroups(const UserCategories& rules);

    ExplorerDataPtr m_data;
    QPlainTextEdit* m_text;
    QLabel* m_status;
    QTableWidget* m_table;
    QCheckBox* m_fileOnly;
    std::shared_ptr<const UserCategories> m_rules;
};

} // namespace headroom
