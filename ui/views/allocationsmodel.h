// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerdata.h"

#include <QAbstractTableModel>

#include <vector>

namespace headroom {

/// A list of allocations of one device (live at an event, or born in a range), one row
/// each. Sorting goes through SortRole (numbers, not display strings).
class AllocationsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { SizeColumn, CategoryColumn, PhaseColumn, BornColumn, FreedColumn, LifetimeColumn, TopFrameColumn, NUM_COLUMNS };
    enum Role { SortRole = Qt::UserRole, AllocationRole, StackRole };

    explicit AllocationsModel(QObject* parent = nullptr);

    void resetData(const ExplorerDataPtr& data, std::vector<size_t> rows);
    void clearData();

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// The row of allocation `allocation`; -1 when it is not listed.
    int rowOf(int64_t allocation) const;
    int64_t allocationAt(int row) const;
    /// The full stack of an allocation, innermost frame first, one per line.
    QString stackText(int64_t allocation) const;
    /// What the file records beside the allocation's stack, one line each: its user_metadata,
    /// its compile context, the recorder's shape, dtype, kind and module; empty: nothing.
    QString recordText(int64_t allocation) const;

private:
    QString topFrame(int row) const;
    QString eventText(int64_t event) const;
    QString lifetimeText(const Allocation& a) const;
    int64_t lifetimeValue(const Allocation& a) const;

    ExplorerDataPtr m_data;
    std::vector<size_t> m_rows;
    mutable std::vector<QString> m_topFrames; ///< filled on first use
};

} // namespace headroom
