// SPDX-License-Identifier: MIT
#include "ui/views/allocationsview.h"

#include "ui/explorer/allocationfilter.h"

#include "ui/plot/categorystyle.h"
#include "ui/views/allocationsmodel.h"

#include <QLocale>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace headroom {

AllocationsView::AllocationsView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selection(selection)
    , m_model(new AllocationsModel(this))
    , m_proxy(new QSortFilterProxyModel(this))
    , m_headline(new QLabel(this))
    , m_filter(new QLineEdit(this))
    , m_table(new QTreeView(this))
    , m_stack(new QPlainTextEdit(this))
{
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(AllocationsModel::SortRole);
    m_proxy->setFilterKeyColumn(-1);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);

    m_filter->setPlaceholderText(tr("Filter by size, category, phase or frame\u2026"));
    m_filter->setClearButtonEnabled(true);
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);

    auto* clearStack = new QToolButton(this);
    clearStack->setText(tr("Clear filters"));
    clearStack->setToolTip(tr("Show every allocation again: clear the stack view's frame and the module view's module"));
    clearStack->setObjectName(QStringLiteral("clearStackFilter"));
    connect(clearStack, &QToolButton::clicked, this, [this] {
        if (!m_selection)
            return;
        m_selection->setStackFilter({});
        m_selection->setModuleFilter({}, {});
    });

    m_table->setModel(m_proxy);
    m_table->setRootIsDecorated(false);
    m_table->setUniformRowHeights(true);
    m_table->setSortingEnabled(true);
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->sortByColumn(AllocationsModel::SizeColumn, Qt::DescendingOrder);
    m_table->header()->setStretchLastSection(true);
    m_table->header()->resizeSection(AllocationsModel::SizeColumn, 90);
    m_table->header()->resizeSection(AllocationsModel::CategoryColumn, 130);
    m_table->header()->resizeSection(AllocationsModel::PhaseColumn, 90);
    m_table->header()->resizeSection(AllocationsModel::BornColumn, 130);
    m_table->header()->resizeSection(AllocationsModel::FreedColumn, 130);
    m_table->header()->resizeSection(AllocationsModel::LifetimeColumn, 150);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentChanged, this, &AllocationsView::onCurrentChanged);

    m_stack->setReadOnly(true);
    m_stack->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_stack->setPlaceholderText(tr("Select an allocation to see its full stack (innermost frame first)."));
    m_stack->setFont(QFont(QStringLiteral("monospace"), font().pointSize() - 1));

    m_headline->setWordWrap(true);
    auto* top = new QHBoxLayout;
    top->addWidget(m_headline, 1);
    top->addWidget(clearStack);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(m_table);
    splitter->addWidget(m_stack);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_filter);
    layout->addWidget(splitter, 1);
    rebuildRows();
}

AllocationsView::~AllocationsView() = default;

void AllocationsView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    rebuildRows();
}

void AllocationsView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    m_state = state;
    if (fields & (Selection::Event | Selection::Range | Selection::Filters | Selection::Device))
        rebuildRows();
    if (fields & Selection::Allocation) {
        const int row = m_model->rowOf(state.allocation);
        const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
        m_settingSelection = true;
        if (index.isValid()) {
            m_table->setCurrentIndex(index);
            m_table->scrollTo(index);
        } else {
            m_table->clearSelection();
        }
        m_settingSelection = false;
        showStack(state.allocation);
    }
}

void AllocationsView::rebuildRows()
{
    if (!m_data) {
        m_model->clearData();
        m_headline->setText(tr("No allocations: open a file (the analysis fills this in)."));
        return;
    }
    const MemoryTimeline& tl = m_data->timeline();
    std::vector<size_t> rows;
    QString what;
    if (m_state.hasRange()) {
        rows = bornInRange(tl, m_state.rangeFirst, m_state.rangeLast);
        what = tr("born in events %1\u2013%2").arg(m_state.rangeFirst).arg(m_state.rangeLast);
    } else {
        const int64_t event = m_state.hasEvent() ? m_state.event : tl.peakEventIndex;
        rows = m_data->analysis.liveAt(tl, event);
        what = event != tl.peakEventIndex ? tr("live after event %1").arg(event)
               : event >= 0             ? tr("live at the peak (event %1)").arg(event)
               : tl.allocated.empty()   ? tr("live in the final state (no allocation history)")
                                        : tr("live at the peak (before the first event)");
    }
    if (const AllocationFilter filter(*m_data, m_state); filter.active()) {
        std::erase_if(rows, [&](size_t i) { return !filter.keeps(i); });
        what += filter.description();
    }
    int64_t total = 0;
    for (size_t i : rows)
        total += tl.allocations[i].size;
    m_headline->setText(tr("<b>%1 allocations</b> %2: %3")
                            .arg(QLocale().toString(qulonglong(rows.size())), what.toHtmlEscaped(), formatBytesQ(total)));
    m_settingSelection = true;
    m_model->resetData(m_data, std::move(rows));
    m_settingSelection = false;
    const int row = m_model->rowOf(m_state.allocation);
    if (row >= 0) {
        m_settingSelection = true;
        m_table->setCurrentIndex(m_proxy->mapFromSource(m_model->index(row, 0)));
        m_settingSelection = false;
    }
}

void AllocationsView::onCurrentChanged()
{
    if (m_settingSelection)
        return;
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid())
        return;
    const int64_t allocation = current.data(AllocationsModel::AllocationRole).toLongLong();
    showStack(allocation);
    if (m_selection)
        m_selection->setAllocation(allocation);
}

void AllocationsView::showStack(int64_t allocation)
{
    if (allocation < 0 || !m_data) {
        m_stack->clear();
        return;
    }
    const Allocation& a = m_data->timeline().allocations[size_t(allocation)];
    const QString record = m_model->recordText(allocation);
    m_stack->setPlainText(tr("%1 allocation at 0x%2\n").arg(formatBytesQ(a.size), QString::number(a.addr, 16))
                          + (record.isEmpty() ? QString() : record + QLatin1Char('\n'))
                          + m_model->stackText(allocation));
}

QString AllocationsView::stackShown() const
{
    return m_stack->toPlainText();
}

QString AllocationsView::headline() const
{
    return m_headline->text();
}

} // namespace headroom
