// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerdata.h"

#include <QAbstractTableModel>

namespace headroom {

/// The device's trace as a table, one row per event plus a first row for the state
/// before the first event (row r is event r - 1), formatted on demand: a million rows
/// cost nothing until they are shown. The allocator view steps through it with the
/// arrow keys, as the official viewer's event list.
class EventListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { IndexColumn, ActionColumn, AddressColumn, SizeColumn, StreamColumn, CodeColumn, ColumnCount };

    explicit EventListModel(QObject* parent = nullptr);

    void setData(const ExplorerDataPtr& data);
    static int rowForEvent(int64_t event) { return int(event + 1); }
    static int64_t eventForRow(int row) { return int64_t(row) - 1; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    ExplorerDataPtr m_data;
};

} // namespace headroom
