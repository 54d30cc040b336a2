// SPDX-License-Identifier: MIT
#pragma once

#include "core/budget/budgetpolicy.h"
#include "ui/explorer/explorerdata.h"
#include "ui/explorer/explorerview.h"

#include <QString>

#include <functional>
#include <QWidget>

#include <optional>
#include <vector>

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace headroom {

class BackgroundJob;
class DeferredRebuild;

/// The standing memory budget (docs/budget.md): the store's configurations, one at a time,
/// as the peaks of its runs over time with the capacity line and the validated peak, the
/// policy's verdict (core/budget/budgetpolicy, the words `budget status` prints) and the open
/// file's run placed in its configuration's history. "Record this file" adds the open file's
/// runs to the store, as `headroom-cli budget record` does.
class BudgetView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit BudgetView(Selection* selection, QWidget* parent = nullptr);

    QString viewId() const override { return QStringLiteral("budget"); }
    QString viewTitle() const override { return tr("Budget"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState&, Selection::Fields) override {}

    /// Reads `store` (an SQLite file or a postgresql:// URL) in the background; remembered.
    void setStore(const QString& store);
    /// Records the open file's runs in the store, then reads it again.
    void recordOpenFile();
    bool isBusy() const;
    QString statusText() const;
    const std::vector<ConfigStatus>& configurations() const { return m_configs; }
    /// The configuration shown (an index into configurations()), if any.
    std::optional<size_t> shownConfiguration() const;

signals:
    void storeRead();

private:
    struct Read {
        std::vector<BudgetRun> runs;
        std::vector<BudgetRun> openRuns;
        QString error;
        QString name;
    };
    void read(bool recordOpenFile = false);
    void rebuild();
    void showConfiguration(int index);
    void plot(const ConfigStatus& s);
    void fillTable(const ConfigStatus& s);
    QString openRunKey() const;

    QLineEdit* m_store;
    QPushButton* m_browse;
    QPushButton* m_record;
    QComboBox* m_config;
    QLabel* m_status;
    QCustomPlot* m_plot;
    QTableWidget* m_table;
    BackgroundJob* m_job;
    DeferredRebuild* m_reread; ///< the store is read when the view is on screen
    ExplorerDataPtr m_data;
    BudgetPolicy m_policy;
    std::vector<BudgetRun> m_runs;
    std::vector<ConfigStatus> m_configs;
    std::vector<BudgetRun> m_openRuns; ///< the open file's runs, as they would be recorded
    QString m_storeName;
    QString m_error;
};

} // namespace headroom
