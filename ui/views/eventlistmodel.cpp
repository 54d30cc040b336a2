// SPDX-License-Identifier: MIT
#include "ui/views/eventlistmodel.h"

#include "core/analysis/summary.h"
#include "ui/plot/categorystyle.h"

#include <QColor>
#include <QLocale>

namespace headroom {

EventListModel::EventListModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void EventListModel::setData(const ExplorerDataPtr& data)
{
    beginResetModel();
    m_data = data;
    endResetModel();
}

int EventListModel::rowCount(const QModelIndex& parent) const
{
    if (parent.isValid() || !m_data)
        return 0;
    return int(std::min<int64_t>(m_data->eventCount() + 1, INT32_MAX));
}

int EventListModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventListModel::data(const QModelIndex& index, int role) const
{
    if (!m_data || !index.isValid())
        return {};
    const int64_t e = eventForRow(index.row());
    const TraceEvents& t = m_data->device().trace;
    if (e < 0) {
        if (role == Qt::DisplayRole && index.column() == ActionColumn)
            return tr("(before the first event)");
        if (role == Qt::ForegroundRole)
            return QColor(Qt::gray);
        return {};
    }
    const auto i = size_t(e);
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case IndexColumn: return QLocale().toString(qlonglong(e));
        case ActionColumn: return QString::fromLatin1(actionName(t.action[i]));
        case AddressColumn: return QString(QStringLiteral("0x") + QString::number(t.addr[i], 16));
        case SizeColumn: return formatBytesQ(t.size[i]);
        case StreamColumn: return QString::number(t.streamAt(i));
        case CodeColumn: {
            // The innermost telling frame: for an OOM row, the code whose request failed.
            // The file name only (the tooltip has the path): the column is narrow.
            const std::vector<std::string> top = m_data->frames().topFrameLines(t.stack[i], 1);
            if (top.empty())
                return QString();
            const size_t slash = top.front().rfind('/', top.front().find(':'));
            return QString::fromStdString(slash == std::string::npos ? top.front() : top.front().substr(slash + 1));
        }
        default: return {};
        }
    }
    if (role == Qt::TextAlignmentRole && (index.column() == IndexColumn || index.column() == SizeColumn))
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && t.action[i] == TraceAction::Oom)
        return QColor(200, 0, 0);
    if (role == Qt::ToolTipRole) {
        QString tip = tr("event %1: %2 of %3 at 0x%4")
                          .arg(QLocale().toString(qlonglong(e)), QString::fromLatin1(actionName(t.action[i])),
                               formatBytesQ(t.size[i]), QString::number(t.addr[i], 16));
        const size_t frames = t.action[i] == TraceAction::Oom ? kOomFrameLines : 3;
        for (const std::string& f : m_data->frames().topFrameLines(t.stack[i], frames))
            tip += QStringLiteral("\n  ") + QString::fromStdString(f);
        return tip;
    }
    return {};
}

QVariant EventListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case IndexColumn: return tr("#");
    case ActionColumn: return tr("Action");
    case AddressColumn: return tr("Address");
    case SizeColumn: return tr("Size");
    case StreamColumn: return tr("Stream");
    case CodeColumn: return tr("Code");
    default: return {};
    }
}

} // namespace headroom
