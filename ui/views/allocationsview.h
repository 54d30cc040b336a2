// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTreeView;

namespace headroom {

class AllocationsModel;

/// The allocations live at the selected event (or born in the selected range), narrowed
/// by the stack filter and a text filter; sortable. Selecting a row selects the
/// allocation (the timeline highlights it) and shows its full stack below.
class AllocationsView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit AllocationsView(Selection* selection, QWidget* parent = nullptr);
    ~AllocationsView() override;

    QString viewId() const override { return QStringLiteral("allocations"); }
    QString viewTitle() const override { return tr("Allocations"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;

    AllocationsModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QTreeView* table() const { return m_table; }
    QLineEdit* filterEdit() const { return m_filter; }
    QString stackShown() const;
    QString headline() const;

private:
    void rebuildRows();
    void onCurrentChanged();
    void showStack(int64_t allocation);

    Selection* m_selection;
    AllocationsModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QLabel* m_headline;
    QLineEdit* m_filter;
    QTreeView* m_table;
    QPlainTextEdit* m_stack;
    ExplorerDataPtr m_data;
    SelectionState m_state;
    bool m_settingSelection = false;
};

} // namespace headroom
