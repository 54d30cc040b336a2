// SPDX-License-Identifier: MIT
#include "ui/views/bookmarksview.h"

#include "core/io/loader.h"
#include "core/util/units.h"
#include "ui/plot/categorystyle.h"

#include <QAction>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace headroom {

namespace {
enum Column { EventColumn, WhereColumn, TitleColumn, NoteColumn, ColumnCount };
constexpr int kEventRole = Qt::UserRole + 1;
} // namespace

BookmarksView::BookmarksView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selection(selection)
    , m_table(new QTableWidget(0, ColumnCount, this))
    , m_add(new QPushButton(tr("Bookmark event"), this))
    , m_remove(new QPushButton(tr("Remove"), this))
{
    m_table->setHorizontalHeaderLabels({tr("Event"), tr("Where"), tr("Title"), tr("Note")});
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                             QAbstractItemView::AnyKeyPressed);
    m_table->setWordWrap(true);
    m_add->setToolTip(tr("Bookmark the selected event (Ctrl+B); then type a title and a note"));
    m_remove->setToolTip(tr("Remove the selected bookmarks (Delete)"));

    auto* bookmarkAction = new QAction(tr("Bookmark event"), this);
    bookmarkAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    bookmarkAction->setShortcutContext(Qt::ApplicationShortcut);
    connect(bookmarkAction, &QAction::triggered, m_add, &QPushButton::click);
    addAction(bookmarkAction);
    auto* removeAction = new QAction(tr("Remove bookmark"), this);
    removeAction->setShortcut(QKeySequence::Delete);
    removeAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(removeAction, &QAction::triggered, m_remove, &QPushButton::click);
    m_table->addAction(removeAction);

    connect(m_add, &QPushButton::clicked, this, [this] {
        if (!m_data || m_event == SelectionState::kNone)
            return;
        const int row = addBookmark(m_event);
        m_table->setCurrentCell(row, TitleColumn);
        m_table->editItem(m_table->item(row, TitleColumn));
    });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        std::vector<int> rows;
        for (const QModelIndex& i : m_table->selectionModel()->selectedRows())
            rows.push_back(i.row());
        std::sort(rows.rbegin(), rows.rend());
        for (int r : rows)
            removeBookmark(r);
    });
    connect(m_table, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
        if (m_filling || item->row() >= int(m_bookmarks.size()))
            return;
        Bookmark& b = m_bookmarks[size_t(item->row())];
        if (item->column() == TitleColumn)
            b.title = item->text();
        else if (item->column() == NoteColumn)
            b.note = item->text();
        else
            return;
        emit bookmarksChanged();
    });
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int column) {
        if (column <= WhereColumn && row < int(m_bookmarks.size()))
            m_selection->setEvent(m_bookmarks[size_t(row)].event);
    });
    connect(m_table, &QTableWidget::cellActivated, this, [this](int row, int) {
        if (row < int(m_bookmarks.size()))
            m_selection->setEvent(m_bookmarks[size_t(row)].event);
    });

    auto* hint = new QLabel(tr("Notes on events, saved with the trace (File \u25B8 Save As) and listed in the postmortem."), this);
    hint->setWordWrap(true);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(hint, 1);
    buttons->addWidget(m_add);
    buttons->addWidget(m_remove);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(buttons);
    layout->addWidget(m_table, 1);
    setData(nullptr);
}

void BookmarksView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_add->setEnabled(bool(data));
    rebuildTable(); // the "where" column names phases once the analysis is in
}

void BookmarksView::selectionChanged(const SelectionState& state, Selection::Fields)
{
    m_event = state.event;
}

QString BookmarksView::whereText(int64_t event) const
{
    if (!m_data || event < 0 || event >= m_data->eventCount())
        return event < 0 ? tr("before the first event") : QString();
    QString text = formatBytesQ(m_data->timeline().allocated[size_t(event)]) + tr(" allocated");
    const auto& phases = m_data->analysis.phases.eventPhase;
    if (size_t(event) < phases.size())
        text += QStringLiteral(", ") + phaseDisplayName(phases[size_t(event)]);
    if (event == m_data->timeline().peakEventIndex)
        text += tr(", the peak");
    return text;
}

int BookmarksView::addBookmark(int64_t event, const QString& title, const QString& note)
{
    auto it = std::lower_bound(m_bookmarks.begin(), m_bookmarks.end(), event,
                               [](const Bookmark& b, int64_t e) { return b.event < e; });
    if (it != m_bookmarks.end() && it->event == event)
        return int(it - m_bookmarks.begin());
    it = m_bookmarks.insert(it, Bookmark{event, title.isEmpty() ? tr("Event %1").arg(event) : title, note});
    rebuildTable();
    emit bookmarksChanged();
    return int(it - m_bookmarks.begin());
}

void BookmarksView::removeBookmark(int row)
{
    if (row < 0 || row >= int(m_bookmarks.size()))
        return;
    m_bookmarks.erase(m_bookmarks.begin() + row);
    rebuildTable();
    emit bookmarksChanged();
}

void BookmarksView::setBookmarks(std::vector<Bookmark> bookmarks)
{
    std::sort(bookmarks.begin(), bookmarks.end(), [](const Bookmark& a, const Bookmark& b) { return a.event < b.event; });
    m_bookmarks = std::move(bookmarks);
    rebuildTable();
    emit bookmarksChanged();
}

void BookmarksView::rebuildTable()
{
    m_filling = true;
    m_table->setRowCount(int(m_bookmarks.size()));
    for (int r = 0; r < int(m_bookmarks.size()); ++r) {
        const Bookmark& b = m_bookmarks[size_t(r)];
        auto* ev = new QTableWidgetItem(QLocale().toString(qlonglong(b.event)));
        ev->setFlags(ev->flags() & ~Qt::ItemIsEditable);
        ev->setData(kEventRole, qlonglong(b.event));
        ev->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        auto* where = new QTableWidgetItem(whereText(b.event));
        where->setFlags(where->flags() & ~Qt::ItemIsEditable);
        m_table->setItem(r, EventColumn, ev);
        m_table->setItem(r, WhereColumn, where);
        m_table->setItem(r, TitleColumn, new QTableWidgetItem(b.title));
        m_table->setItem(r, NoteColumn, new QTableWidgetItem(b.note));
    }
    m_table->resizeColumnToContents(EventColumn);
    m_table->resizeColumnToContents(WhereColumn);
    m_remove->setEnabled(!m_bookmarks.empty());
    m_filling = false;
}

QJsonArray BookmarksView::toJson() const
{
    QJsonArray out;
    for (const Bookmark& b : m_bookmarks)
        out.append(QJsonObject{{QStringLiteral("event"), double(b.event)},
                               {QStringLiteral("title"), b.title},
                               {QStringLiteral("note"), b.note}});
    return out;
}

std::vector<Bookmark> BookmarksView::fromJson(const QJsonArray& array)
{
    std::vector<Bookmark> out;
    for (const QJsonValue& v : array) {
        const QJsonObject o = v.toObject();
        const QJsonValue event = o.value(QStringLiteral("event"));
        if (!event.isDouble() || event.toDouble() < -1 || event.toDouble() > 9e15)
            continue; // not a bookmark this version understands: skip it, keep the rest
        out.push_back({int64_t(event.toDouble()), o.value(QStringLiteral("title")).toString(),
                       o.value(QStringLiteral("note")).toString()});
    }
    return out;
}

QString BookmarksView::markdown() const
{
    if (m_bookmarks.empty())
        return {};
    auto cell = [](QString s) { return s.replace(QLatin1Char('|'), QStringLiteral("\\|")).replace(QLatin1Char('\n'), QLatin1Char(' ')); };
    QString md = tr("| Event | Where | Title | Note |\n|---:|---|---|---|\n");
    for (const Bookmark& b : m_bookmarks)
        md += QStringLiteral("| %1 | %2 | %3 | %4 |\n").arg(b.event).arg(cell(whereText(b.event)), cell(b.title), cell(b.note));
    return md;
}

} // namespace headroom
