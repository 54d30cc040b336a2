// SPDX-License-Identifier: MIT
#include "ui/views/allocatorview.h"

#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"
#include "ui/views/eventlistmodel.h"
#include "ui/views/segmentmapwidget.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

namespace headroom {

AllocatorView::AllocatorView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selection(selection)
    , m_summary(new QLabel(this))
    , m_search(new QLineEdit(this))
    , m_events(new QTableView(this))
    , m_model(new EventListModel(this))
    , m_scroll(new QScrollArea(this))
    , m_map(new SegmentMapWidget(this))
    , m_peak(new QToolButton(this))
    , m_last(new QToolButton(this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_search->setPlaceholderText(tr("Search blocks by address (0x\u2026) or frame text"));
    m_search->setClearButtonEnabled(true);
    connect(m_search, &QLineEdit::textChanged, this, &AllocatorView::setSearch);

    m_events->setModel(m_model);
    m_events->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_events->setSelectionMode(QAbstractItemView::SingleSelection);
    m_events->verticalHeader()->hide();
    m_events->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_events->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    m_events->horizontalHeader()->setStretchLastSection(true);
    m_events->setAlternatingRowColors(true);
    m_events->setToolTip(tr("Up/Down step through the events; the map shows the allocator after the selected one."));
    connect(m_events->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
        if (cur.isValid() && m_data && !m_syncing)
            m_selection->setEvent(EventListModel::eventForRow(cur.row()));
    });

    m_peak->setText(tr("Peak"));
    m_peak->setToolTip(tr("Show the allocator at the peak of allocated memory"));
    connect(m_peak, &QToolButton::clicked, this, [this] {
        if (m_data)
            m_selection->setEvent(m_data->timeline().peakEventIndex);
    });
    m_last->setText(tr("Last event"));
    m_last->setToolTip(tr("Show the snapshot's recorded segments and blocks (after the last event)"));
    connect(m_last, &QToolButton::clicked, this, [this] {
        if (m_data)
            m_selection->setEvent(m_data->eventCount() - 1);
    });

    m_scroll->setWidget(m_map);
    m_scroll->setWidgetResizable(true);
    auto* right = new QWidget(this);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    bar->addWidget(m_search, 1);
    bar->addWidget(m_peak);
    bar->addWidget(m_last);
    rightLayout->addWidget(m_summary);
    rightLayout->addLayout(bar);
    rightLayout->addWidget(m_scroll, 1);

    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_events);
    split->addWidget(right);
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 1);
    split->setSizes({fontMetrics().horizontalAdvance(QStringLiteral("0")) * 58, 600});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(split);
    m_refresh = new DeferredRebuild(this, [this] { refresh(); });
    setData(nullptr);
}

AllocatorView::~AllocatorView() = default;

void AllocatorView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_modelStale = true;
    m_event = m_selection->state().event;
    m_refresh->request();
}

void AllocatorView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    if (!(fields & (Selection::Event | Selection::Device)) || state.event == m_event)
        return;
    m_event = state.event;
    m_refresh->request();
}

QTableView* AllocatorView::eventTable() const
{
    m_refresh->ensure();
    return m_events;
}

void AllocatorView::refresh()
{
    if (m_modelStale) {
        m_modelStale = false;
        m_model->setData(m_data);
        const QFontMetrics fm = m_events->fontMetrics();
        const int pad = fm.horizontalAdvance(QStringLiteral("  ")) + 6;
        m_events->setColumnWidth(EventListModel::IndexColumn,
                                 fm.horizontalAdvance(QLocale().toString(qlonglong(m_data ? m_data->eventCount() : 0))) + pad);
        m_events->setColumnWidth(EventListModel::ActionColumn, fm.horizontalAdvance(QStringLiteral("free_requested")) + pad);
        m_events->setColumnWidth(EventListModel::AddressColumn, fm.horizontalAdvance(QStringLiteral("0x7fffffffffff00")) + pad);
        m_events->setColumnWidth(EventListModel::SizeColumn, fm.horizontalAdvance(QStringLiteral("1000.00 MiB")) + pad);
        // The stream is a small number; the code beside it (the failing request's on an OOM
        // row) is what the list is read for.
        m_events->setColumnWidth(EventListModel::StreamColumn, fm.horizontalAdvance(QStringLiteral("Stream")) + pad);
        m_events->setColumnWidth(EventListModel::CodeColumn, fm.horizontalAdvance(QStringLiteral("cpu_models.py:82:forward")) + pad);
    }
    m_peak->setEnabled(bool(m_data));
    m_last->setEnabled(bool(m_data));
    if (!m_data) {
        m_map->setState(nullptr, {});
        m_summary->setText(tr("Allocator: waiting for a file and its analysis."));
        return;
    }
    const int64_t n = m_data->eventCount();
    const int64_t event = m_event == SelectionState::kNone ? n - 1 : std::clamp<int64_t>(m_event, -1, n - 1);
    // After the last event the snapshot's recorded blocks are exact; elsewhere the state is
    // reconstructed from the trace.
    AllocatorState st = event == n - 1 && !m_data->device().segments.empty()
                            ? recordedAllocatorState(m_data->device())
                            : m_data->analysis.allocator.stateAt(m_data->timeline(), event);
    m_map->setState(m_data, std::move(st));
    const int row = EventListModel::rowForEvent(event);
    if (m_events->currentIndex().row() != row) {
        const QModelIndex idx = m_model->index(row, 0);
        m_syncing = true; // following the selection, not changing it
        m_events->setCurrentIndex(idx);
        m_syncing = false;
        m_events->scrollTo(idx, QAbstractItemView::PositionAtCenter);
    }
    updateSummary();
}

void AllocatorView::updateSummary()
{
    const AllocatorState& st = m_map->state();
    auto swatch = [](BlockState s) {
        return QStringLiteral("<span style='color:%1'>\u25A0</span>").arg(SegmentMapWidget::stateColor(s).name());
    };
    const TraceEvents& t = m_data->device().trace;
    QString where = st.event < 0 ? tr("before the first event")
                                 : tr("after event %1 (%2 %3)")
                                       .arg(QLocale().toString(qlonglong(st.event)),
                                            QString::fromLatin1(actionName(t.action[size_t(st.event)])),
                                            formatBytesQ(t.size[size_t(st.event)]));
    if (st.event == m_data->timeline().peakEventIndex)
        where += tr(", the peak");
    QString text =
        tr("<b>%1: %2 segments, reserved %3, allocated %4</b> (%5 of reserved; %6)<br>"
           "%7 allocated blocks (coloured by category) %8 &nbsp; %9 pending free %10 &nbsp; %11 cached free %12 in %13 blocks, largest %14"
           " &nbsp; rounding waste %15")
            .arg(where, QLocale().toString(qulonglong(st.segments.size())), formatBytesQ(st.reserved),
                 formatBytesQ(st.allocated),
                 st.reserved > 0 ? QStringLiteral("%1%").arg(100.0 * double(st.allocated) / double(st.reserved), 0, 'f', 1)
                                 : QStringLiteral("\u2013"),
                 st.recorded ? tr("the snapshot's recorded blocks") : tr("blocks reconstructed from the trace"),
                 swatch(BlockState::ActiveAllocated), formatBytesQ(st.allocatedBlocks),
                 swatch(BlockState::ActivePendingFree))
            .arg(formatBytesQ(st.pendingFree), swatch(BlockState::Inactive), formatBytesQ(st.inactive),
                 QLocale().toString(qlonglong(st.inactiveBlocks)), formatBytesQ(st.largestFree), formatBytesQ(st.internal));
    if (const auto pools = st.privatePools(); !pools.empty()) {
        QStringList parts;
        for (const AllocatorState::PoolShare& p : pools)
            parts << tr("(%1, %2): %3 reserved in %4, %5 allocated")
                         .arg(p.poolId.first)
                         .arg(p.poolId.second)
                         .arg(formatBytesQ(p.reserved),
                              p.segments == 1 ? tr("1 segment") : tr("%1 segments").arg(p.segments),
                              formatBytesQ(p.allocated));
        text += tr("<br>Private pools (CUDA graphs, MemPool), apart from the default pool: %1").arg(parts.join(QStringLiteral("; ")));
    }
    if (st.unplacedCount > 0)
        text += tr("<br><span style='color:#b00'>%1 live allocations (%2) lie in no known segment: the trace lost "
                   "events.</span>")
                    .arg(QLocale().toString(qlonglong(st.unplacedCount)), formatBytesQ(st.unplacedBytes));
    m_summary->setText(text);
}

QString AllocatorView::summaryText() const
{
    m_refresh->ensure();
    return m_summary->text();
}

int AllocatorView::matchCount() const
{
    m_refresh->ensure();
    return m_map->matchCount();
}

const AllocatorState& AllocatorView::shownState()
{
    m_refresh->ensure();
    return m_map->state();
}

void AllocatorView::setSearch(const QString& text)
{
    if (m_search->text() != text)
        m_search->setText(text); // emits, comes back here
    m_map->setSearch(text);
}

} // namespace headroom
