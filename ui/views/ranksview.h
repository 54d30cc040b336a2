// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/ranktable.h"
#include "ui/explorer/explorerdata.h" // the LoadedTrace pointer metatype
#include "ui/explorer/explorerview.h"

#include <QStringList>
#include <QWidget>

#include <memory>
#include <vector>

class QLabel;
class QPushButton;
class QTableWidget;

namespace headroom {

class BackgroundJob;

/// Every rank and device at a glance: the devices of the file on screen plus the rank files
/// the user adds (one per process of a distributed run), one row per rank and device with
/// its peak, how far that peak is from the median of the ranks (the imbalance ZeRO/FSDP
/// runs show), reserved memory and OOMs; the worst rank is marked. A double click (or
/// Enter) shows that rank and device in every view.
class RanksView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit RanksView(Selection* selection, QWidget* parent = nullptr);

    QString viewId() const override { return QStringLiteral("ranks"); }
    QString viewTitle() const override { return tr("Ranks"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState&, Selection::Fields) override {}

    /// Loads rank files in the background and adds their rows. Files added while others
    /// still load join them: the running job is replaced by one that loads them all.
    void addFiles(const QStringList& paths);
    bool isLoading() const;
    const std::vector<RankTable::Row>& rows() const { return m_rows; }
    QTableWidget* table() const { return m_table; }
    QString statusText() const;

signals:
    /// Show this trace's device (ordinal) in the explorer.
    void showRequested(const QString& path, std::shared_ptr<const headroom::LoadedTrace> trace, int device);
    void filesAdded();

private:
    struct Loaded {
        std::vector<std::shared_ptr<const LoadedTrace>> traces;
        QStringList errors;
    };
    void rebuild();

    QPushButton* m_add;
    QLabel* m_status;
    QTableWidget* m_table;
    ExplorerDataPtr m_data;
    std::vector<std::shared_ptr<const LoadedTrace>> m_traces; ///< the file on screen first
    std::vector<RankTable::Row> m_rows;
    QStringList m_errors;
    QStringList m_pending; ///< the files the running job loads
    BackgroundJob* m_job;
};

} // namespace headroom
