// SPDX-License-Identifier: MIT
#include "ui/views/allocationsmodel.h"

#include "core/model/recordedtensors.h"

#include "core/analysis/usercode.h"

#include "core/util/units.h"
#include "ui/plot/categorystyle.h"

#include <QLocale>
#include <QBrush>

namespace headroom {

AllocationsModel::AllocationsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void AllocationsModel::resetData(const ExplorerDataPtr& data, std::vector<size_t> rows)
{
    beginResetModel();
    m_data = data;
    m_rows = m_data ? std::move(rows) : std::vector<size_t>{};
    m_topFrames.assign(m_rows.size(), QString());
    endResetModel();
}

void AllocationsModel::clearData()
{
    resetData(nullptr, {});
}

int AllocationsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int AllocationsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : NUM_COLUMNS;
}

int AllocationsModel::rowOf(int64_t allocation) const
{
    for (size_t r = 0; r < m_rows.size(); ++r)
        if (static_cast<int64_t>(m_rows[r]) == allocation)
            return static_cast<int>(r);
    return -1;
}

int64_t AllocationsModel::allocationAt(int row) const
{
    return row >= 0 && size_t(row) < m_rows.size() ? static_cast<int64_t>(m_rows[size_t(row)]) : -1;
}

QString AllocationsModel::topFrame(int row) const
{
    QString& cached = m_topFrames[size_t(row)];
    if (cached.isNull()) {
        const Allocation& a = m_data->timeline().allocations[m_rows[size_t(row)]];
        // The user's own code, not the library line under it (the stacks view has the rest).
        const uint32_t user = userCodeFrame(m_data->frames(), a.stack);
        cached = user == kNoFrame ? tr("(no frames)") : QString::fromStdString(m_data->frames().formatFrame(user));
    }
    return cached;
}

QString AllocationsModel::eventText(int64_t event) const
{
    const TraceEvents& ev = m_data->device().trace;
    QString text = QLocale().toString(qlonglong(event));
    if (ev.anyTime && event >= 0 && size_t(event) < ev.count() && ev.timeUs[size_t(event)] != TraceEvents::kNoTime) {
        const int64_t first = ev.timeUs.front() != TraceEvents::kNoTime ? ev.timeUs.front() : 0;
        text += QStringLiteral(" (") + QString::fromStdString(formatDurationUs(ev.timeUs[size_t(event)] - first))
                + QLatin1Char(')');
    }
    return text;
}

int64_t AllocationsModel::lifetimeValue(const Allocation& a) const
{
    const int64_t start = a.start == Allocation::kBeforeWindow ? 0 : a.start;
    const int64_t end = a.end == Allocation::kStillAlive ? m_data->eventCount() : a.end;
    return end - start;
}

QString AllocationsModel::lifetimeText(const Allocation& a) const
{
    const TraceEvents& ev = m_data->device().trace;
    const int64_t events = lifetimeValue(a);
    QString text = tr("%1 events").arg(QLocale().toString(qlonglong(events)));
    if (ev.anyTime && a.start >= 0 && a.end >= 0 && ev.timeUs[size_t(a.start)] != TraceEvents::kNoTime
        && ev.timeUs[size_t(a.end)] != TraceEvents::kNoTime)
        text = QString::fromStdString(formatDurationUs(ev.timeUs[size_t(a.end)] - ev.timeUs[size_t(a.start)]))
               + QStringLiteral(" \u00B7 ") + text;
    if (a.start == Allocation::kBeforeWindow || a.end == Allocation::kStillAlive)
        text = QStringLiteral("\u2265 ") + text;
    return text;
}

QString AllocationsModel::stackText(int64_t allocation) const
{
    if (!m_data || allocation < 0 || size_t(allocation) >= m_data->timeline().allocations.size())
        return QString();
    const FrameTable& frames = m_data->frames();
    QStringList lines;
    const StringPool& strings = frames.strings();
    auto text = [&](uint32_t id) {
        const std::string_view s = strings.get(id);
        return QString::fromUtf8(s.data(), qsizetype(s.size()));
    };
    for (uint32_t f : frames.stack(m_data->timeline().allocations[size_t(allocation)].stack)) {
        if (frames.isNoiseFrame(f))
            continue;
        lines << QString::fromStdString(frames.formatFrame(f));
        // torch.compile's node behind generated code: the model's line is above, the node here.
        if (const FxFrame* fx = frames.fx(f))
            lines << QStringLiteral("    ") + tr("FX node %1: %2 %3").arg(text(fx->node), text(fx->op), text(fx->target)).trimmed();
    }
    QString out = lines.isEmpty() ? tr("(no frames recorded)") : lines.join(QLatin1Char('\n'));
    const int64_t start = m_data->timeline().allocations[size_t(allocation)].start;
    if (const std::string_view fwd = entryStringAt(m_data->device().trace.forwardFrames, strings, start); !fwd.empty())
    {
        QString text = QString::fromUtf8(fwd.data(), qsizetype(fwd.size()));
        while (text.endsWith(QLatin1Char('\n')) || text.endsWith(QLatin1Char(' ')))
            text.chop(1); // PyTorch's lines keep their indentation; only the end is trimmed
        out += tr("\n\nallocated for the backward of:\n") + text;
    }
    return out;
}

QString AllocationsModel::recordText(int64_t allocation) const
{
    if (!m_data || allocation < 0 || size_t(allocation) >= m_data->timeline().allocations.size())
        return QString();
    const Allocation& a = m_data->timeline().allocations[size_t(allocation)];
    const TraceEvents& events = m_data->device().trace;
    const StringPool& strings = m_data->frames().strings();
    QStringList lines;
    if (const std::string_view m = entryStringAt(events.userMetadata, strings, a.start); !m.empty())
        lines << tr("user_metadata: %1").arg(QString::fromUtf8(m.data(), qsizetype(m.size())));
    if (const std::string_view c = entryStringAt(events.compileContext, strings, a.start); !c.empty())
        lines << tr("compile context: %1").arg(QString::fromUtf8(c.data(), qsizetype(c.size())));
    if (const auto pool = entryPoolAt(events.poolIds, a.start))
        lines << tr("private pool (%1, %2): a CUDA graph's or a MemPool's memory, apart from the default pool")
                     .arg(pool->first)
                     .arg(pool->second);
    if (const RecordedTensor* t = recordedTensorAt(events.tensors, a.start)) {
        QStringList dims;
        for (int64_t d : t->shape)
            dims << QString::number(d);
        const std::string_view dtype = strings.get(t->dtype), module = strings.get(t->module);
        QString line = tr("recorded: %1, %2 [%3]")
                           .arg(QString::fromUtf8(recordedKindName(t->kind).data()),
                                QString::fromUtf8(dtype.data(), qsizetype(dtype.size())), dims.join(QStringLiteral(", ")));
        if (t->phase != RecordedTensor::Phase::Unknown)
            line += tr(", made in the %1").arg(QString::fromUtf8(recordedPhaseName(t->phase).data()));
        line += !t->hasModule    ? tr(", outside any module's forward")
                : module.empty() ? tr(", by the root module")
                                 : tr(", by %1").arg(QString::fromUtf8(module.data(), qsizetype(module.size())));
        lines << line;
        if (t->hasOp) { // its own line: the pane does not wrap, and the recorded line is long
            const std::string_view op = strings.get(t->op);
            lines << tr("made by %1").arg(QString::fromUtf8(op.data(), qsizetype(op.size())));
        }
    }
    return lines.join(QLatin1Char('\n'));
}

QVariant AllocationsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= NUM_COLUMNS || !m_data)
        return {};
    const size_t i = m_rows[size_t(index.row())];
    const Allocation& a = m_data->timeline().allocations[i];
    const AllocationClass& c = m_data->analysis.classes[i];
    if (role == AllocationRole)
        return qlonglong(i);
    if (role == StackRole)
        return stackText(static_cast<int64_t>(i));
    if (role == Qt::TextAlignmentRole)
        return index.column() == SizeColumn || index.column() == BornColumn || index.column() == FreedColumn
                       || index.column() == LifetimeColumn
                   ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                   : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    if (role == Qt::DecorationRole && index.column() == CategoryColumn)
        return categoryColor(c.category);
    if (role == Qt::DecorationRole && index.column() == PhaseColumn)
        return phaseColor(c.birthPhase);
    if (role == Qt::ToolTipRole) {
        if (index.column() == CategoryColumn)
            return QString::fromLatin1(categoryRuleText(c.rule).data(), qsizetype(categoryRuleText(c.rule).size()));
        return stackText(static_cast<int64_t>(i));
    }
    if (role == SortRole) {
        switch (index.column()) {
        case SizeColumn: return qlonglong(a.size);
        case CategoryColumn: return categoryDisplayName(c.category);
        case PhaseColumn: return int(c.birthPhase);
        case BornColumn: return qlonglong(a.start);
        case FreedColumn: return qlonglong(a.end == Allocation::kStillAlive ? INT64_MAX : a.end);
        case LifetimeColumn: return qlonglong(lifetimeValue(a));
        case TopFrameColumn: return topFrame(index.row());
        }
    }
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case SizeColumn: return formatBytesQ(a.size);
        case CategoryColumn: return categoryDisplayName(c.category);
        case PhaseColumn: return phaseDisplayName(c.birthPhase);
        case BornColumn: return a.start == Allocation::kBeforeWindow ? tr("before the trace") : eventText(a.start);
        case FreedColumn: return a.end == Allocation::kStillAlive ? tr("never") : eventText(a.end);
        case LifetimeColumn: return lifetimeText(a);
        case TopFrameColumn: return topFrame(index.row());
        }
    }
    return {};
}

QVariant AllocationsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= NUM_COLUMNS)
        return {};
    switch (section) {
    case SizeColumn: return tr("Size");
    case CategoryColumn: return tr("Category");
    case PhaseColumn: return tr("Phase");
    case BornColumn: return tr("Born (event)");
    case FreedColumn: return tr("Freed (event)");
    case LifetimeColumn: return tr("Lifetime");
    case TopFrameColumn: return tr("Allocated by");
    }
    return {};
}

} // namespace headroom
