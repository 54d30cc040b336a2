// SPDX-License-Identifier: MIT
#include "ui/views/moduleview.h"

#include "core/analysis/livegroups.h"
#include "core/analysis/moduleforward.h"
#include "core/analysis/moduleof.h"
#include "core/util/textlayout.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QTreeWidgetItemIterator>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

namespace headroom {

namespace {

constexpr int kTotalColumn = 1, kCountColumn = 2, kBeforeColumn = 3, kPeakColumn = 4, kAfterColumn = 5,
              kFirstCategoryColumn = 6;
constexpr int kKeyRole = Qt::UserRole + 1; // on column 0: the row's module filter key
constexpr size_t kAllModules = 100000;

/// One row of the tree: its bytes, including those of the modules under it.
struct Node {
    int64_t bytes = 0, count = 0;
    std::array<int64_t, kTensorCategoryCount> byCategory{};
    std::map<std::string, Node> children; ///< by the next component of the qualified name
    void add(const ModuleGroup& m)
    {
        bytes += m.bytes;
        count += m.count;
        for (size_t c = 0; c < kTensorCategoryCount; ++c)
            byCategory[c] += m.byCategory[c];
    }
};

/// A tree item whose byte columns sort as numbers.
class BytesItem : public QTreeWidgetItem {
public:
    using QTreeWidgetItem::QTreeWidgetItem;
    bool operator<(const QTreeWidgetItem& other) const override
    {
        const int c = treeWidget() ? treeWidget()->sortColumn() : 0;
        if (c == 0)
            return text(0) < other.text(0);
        return data(c, Qt::UserRole).toLongLong() < other.data(c, Qt::UserRole).toLongLong();
    }
};

/// "blocks.0.attn" -> blocks, 0, attn.
std::vector<std::string> splitQualified(const std::string& name)
{
    std::vector<std::string> parts;
    size_t from = 0;
    for (size_t dot; (dot = name.find('.', from)) != std::string::npos; from = dot + 1)
        parts.push_back(name.substr(from, dot - from));
    parts.push_back(name.substr(from));
    return parts;
}

void setBytes(QTreeWidgetItem* item, int column, int64_t bytes)
{
    item->setText(column, bytes > 0 ? formatBytesQ(bytes) : QString());
    item->setData(column, Qt::UserRole, qlonglong(bytes));
    item->setTextAlignment(column, Qt::AlignRight | Qt::AlignVCenter);
}

/// MemTracker's forward moments of the row's module (core/analysis/moduleforward.h).
void setForwardStates(QTreeWidgetItem* item, const ModuleForwardWindow* w)
{
    if (!w)
        return;
    setBytes(item, kBeforeColumn, w->beforeBytes);
    setBytes(item, kPeakColumn, w->peakBytes);
    setBytes(item, kAfterColumn, w->afterBytes);
    const QString events = QObject::tr("its forward's allocations: events %1 to %2 (%3 allocations); the peak between them "
                                       "at event %4")
                               .arg(w->firstEvent)
                               .arg(w->lastEvent)
                               .arg(w->count)
                               .arg(w->peakEvent);
    for (int c : {kBeforeColumn, kPeakColumn, kAfterColumn})
        item->setToolTip(c, events);
}

QTreeWidgetItem* addItem(QTreeWidgetItem* parent, QTreeWidget* tree, const QString& name, const Node& n,
                         const std::vector<TensorCategory>& shown)
{
    QTreeWidgetItem* item = parent ? new BytesItem(parent) : new BytesItem(tree);
    item->setText(0, name);
    setBytes(item, kTotalColumn, n.bytes);
    item->setText(kCountColumn, QString::number(n.count));
    item->setData(kCountColumn, Qt::UserRole, qlonglong(n.count));
    item->setTextAlignment(kCountColumn, Qt::AlignRight | Qt::AlignVCenter);
    for (size_t k = 0; k < shown.size(); ++k)
        setBytes(item, kFirstCategoryColumn + int(k), n.byCategory[size_t(shown[k])]);
    return item;
}

/// `path`: the qualified name of `n` ("" at the top), so each row knows its filter key.
void addChildren(QTreeWidgetItem* item, const Node& n, const std::string& path, const std::vector<TensorCategory>& shown,
                 const ModuleForwardWindows& windows)
{
    for (const auto& [name, child] : n.children) {
        const std::string qualified = path.empty() ? name : path + "." + name;
        QTreeWidgetItem* row = addItem(item, nullptr, QString::fromStdString(name), child, shown);
        row->setData(0, kKeyRole, QString::fromStdString("n:" + qualified));
        setForwardStates(row, windows.find("n:" + qualified));
        addChildren(row, child, qualified, shown, windows);
    }
}

} // namespace

ModuleView::ModuleView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selection(selection)
    , m_header(new QLabel(this))
    , m_tree(new QTreeWidget(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_header->setWordWrap(true);
    m_header->setTextFormat(Qt::PlainText);
    layout->addWidget(m_header);
    m_filterNote = new QLabel(this);
    m_filterNote->setObjectName(QStringLiteral("moduleFilterNote"));
    m_filterNote->setWordWrap(true);
    m_filterNote->setTextFormat(Qt::PlainText);
    m_filterNote->setStyleSheet(QStringLiteral("font-weight: bold"));
    m_filterNote->hide();
    layout->addWidget(m_filterNote);
    layout->addWidget(m_tree, 1);
    m_tree->setObjectName(QStringLiteral("moduleTree"));
    m_tree->setSortingEnabled(true);
    m_tree->setUniformRowHeights(true);
    m_tree->header()->setStretchLastSection(false);
    m_tree->setTextElideMode(Qt::ElideMiddle); // a frame's file and function at its two ends
    m_tree->setToolTip(tr("Click a module to filter the timeline, the allocations and the stacks to it; click it again to show all"));
    connect(m_tree, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) { toggleFilter(item); });
    m_rebuild = new DeferredRebuild(this, [this] { rebuild(); });
    m_rebuild->watch(m_tree->viewport());
    rebuild();
}

ModuleView::~ModuleView() = default;

void ModuleView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_followPeak = true;
    m_event = data ? data->timeline().peakEventIndex : -1;
    m_rebuild->request();
}

void ModuleView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    if (fields & Selection::ModuleFilter) {
        m_filter = state.moduleFilter;
        m_filterLabel = state.moduleLabel;
        markFiltered();
    }
    if (!(fields & Selection::Event) || !m_data)
        return;
    const int64_t event = state.hasEvent() ? state.event : m_data->timeline().peakEventIndex;
    if (event == m_event && !m_followPeak)
        return;
    m_followPeak = !state.hasEvent();
    m_event = event;
    m_rebuild->request();
}

QString ModuleView::filterKey(const QTreeWidgetItem* item)
{
    return item ? item->data(0, kKeyRole).toString() : QString();
}

void ModuleView::toggleFilter(QTreeWidgetItem* item)
{
    const QString key = filterKey(item);
    if (!m_selection || key.isEmpty())
        return;
    if (key.toStdString() == m_filter) {
        m_selection->setModuleFilter({}, {});
        return;
    }
    // A recorded module by its qualified name; a row named by its forward frame by that.
    const QString label = key.startsWith(QLatin1String("n:")) ? key.mid(2) : item->text(0);
    m_selection->setModuleFilter(key.toStdString(), label.isEmpty() ? tr("(root module)").toStdString() : label.toStdString());
}

/// Bold for the row the views are filtered to, so the tree says what the others show.
void ModuleView::markFiltered()
{
    if (m_data)
        m_filterNote->setText(m_filter.empty() ? QString()
                                               : tr("Filtered to %1: the timeline's line, the allocations and the stacks show "
                                                    "its allocations alone. Click it again to show everything.")
                                                     .arg(QString::fromStdString(m_filterLabel)));
    m_filterNote->setVisible(!m_filter.empty());
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it) {
        const bool on = !m_filter.empty() && filterKey(*it).toStdString() == m_filter;
        QFont f = (*it)->font(0);
        if (f.bold() != on) {
            f.setBold(on);
            for (int c = 0; c < m_tree->columnCount(); ++c)
                (*it)->setFont(c, f);
        }
        if (on)
            m_tree->setCurrentItem(*it);
    }
}

QTreeWidget* ModuleView::tree() const
{
    m_rebuild->ensure();
    return m_tree;
}

QString ModuleView::headline() const
{
    m_rebuild->ensure();
    return m_header->text();
}

void ModuleView::render(QCPPainter* painter, const QSize& size)
{
    m_rebuild->ensure();
    ExplorerView::render(painter, size);
}

void ModuleView::rebuild()
{
    m_tree->clear();
    if (!m_data) {
        m_header->setText(tr("Memory by module appears here once a file is open and analysed."));
        return;
    }
    fill(LiveGroups::at(*m_data->trace, m_data->deviceIndex, m_data->analysis, m_event, kAllModules, 1),
         moduleForwardWindows(*m_data->trace, m_data->deviceIndex, m_data->analysis, m_event));
}

void ModuleView::fill(const LiveGroups& g, const ModuleForwardWindows& windows)
{
    // What no module's forward made (parameters, gradients, optimizer state, the loss): one
    // row, so that the rows add up to everything alive.
    Node outside;
    outside.bytes = g.bytes;
    outside.count = g.count;
    outside.byCategory = g.breakdown.byCategory;
    for (const ModuleGroup& m : g.byModule) {
        outside.bytes -= m.bytes;
        outside.count -= m.count;
        for (size_t c = 0; c < kTensorCategoryCount; ++c)
            outside.byCategory[c] -= m.byCategory[c];
    }
    // The categories alive, in the timeline's stacking order.
    std::vector<TensorCategory> shown;
    for (TensorCategory c : categoryStackOrder())
        if (g.breakdown.byCategory[size_t(c)] > 0)
            shown.push_back(c);
    QStringList headers{tr("Module"), tr("Total"), tr("Count"), tr("Before its forward"), tr("Peak in its forward"),
                        tr("After its forward")};
    for (TensorCategory c : shown)
        headers << categoryDisplayName(c);
    m_tree->setColumnCount(headers.size());
    m_tree->setHeaderLabels(headers);

    Node named;
    std::vector<const ModuleGroup*> frames;
    for (const ModuleGroup& m : g.byModule) {
        if (m.name.empty()) {
            frames.push_back(&m);
            continue;
        }
        Node* n = &named;
        for (const std::string& part : splitQualified(m.name)) {
            n = &n->children[part];
            n->add(m);
        }
    }
    m_tree->setSortingEnabled(false);
    addChildren(m_tree->invisibleRootItem(), named, std::string(), shown, windows);
    for (const ModuleGroup* m : frames) {
        Node n;
        n.add(*m);
        QTreeWidgetItem* item = addItem(nullptr, m_tree, QString::fromStdString(compactFrame(m->forward)), n, shown);
        item->setData(0, kKeyRole, QString::fromStdString(m->key));
        setForwardStates(item, windows.find(m->key));
        item->setToolTip(0, m->source == "constructor"
                                ? tr("No module name recorded: the layer whose constructor is %1, where an inference "
                                     "engine's loader makes its weights (no forward runs then)")
                                      .arg(QString::fromStdString(m->forward))
                                : tr("No module name recorded: the module whose forward is %1")
                                      .arg(QString::fromStdString(m->forward)));
    }
    if (outside.bytes > 0) {
        QTreeWidgetItem* item = addItem(nullptr, m_tree, tr("(outside any module's forward)"), outside, shown);
        item->setData(0, kKeyRole, QString::fromUtf8(kOutsideModulesKey.data(), int(kOutsideModulesKey.size())));
        item->setToolTip(0, tr("Allocated where no nn.Module forward was running: parameters, gradients, "
                               "optimizer state, the loss, the backward's temporaries"));
    }
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(kTotalColumn, Qt::DescendingOrder);
    m_tree->expandToDepth(2);
    for (int c = 0; c < m_tree->columnCount(); ++c)
        m_tree->resizeColumnToContents(c);
    // A module's frame path can be wider than the dock: the name column is capped (its middle
    // elided, the whole name in the tooltip) so the byte columns beside it show.
    const int nameCap = std::max(220, m_tree->viewport()->width() * 2 / 5);
    if (m_tree->columnWidth(0) > nameCap)
        m_tree->setColumnWidth(0, nameCap);

    const QString at = g.event == m_data->timeline().peakEventIndex ? tr("the peak (event %1)").arg(g.event)
                                                                      : tr("event %1").arg(g.event);
    QStringList names;
    if (g.recordedModuleBytes > 0)
        names << tr("names from the recorder for %1").arg(formatBytesQ(g.recordedModuleBytes));
    if (g.metadataModuleBytes > 0)
        names << tr("from user_metadata for %1").arg(formatBytesQ(g.metadataModuleBytes));
    const bool built = std::any_of(g.byModule.begin(), g.byModule.end(),
                                   [](const ModuleGroup& m) { return m.source == "constructor"; });
    const QString source =
        !names.isEmpty() ? names.join(QStringLiteral(", "))
                         : tr("no module names in the file: each module is the frame its forward was called from%1 "
                              "(record with python/headroom_record.py for names)")
                               .arg(built ? tr(", or for an inference engine's weights the layer constructor "
                                               "(__init__) that made them")
                                          : QString());
    // MemTracker's forward moments, of the iteration that holds the event.
    const QString moments =
        windows.byKey.empty()
            ? tr("No module allocated in the forward of this iteration, so its forward moments are not known.")
            : tr("Before / peak / after its forward: the memory alive around the module's allocations in iteration "
                 "%1's forward (the backward's allocations name no module).")
                  .arg(windows.iteration); // numbered from 0, as the Diagnosis and the timeline number them
    m_header->setText(tr("At %1: %2 of %3 alive attributed to a module; %4. %5 Click a module to filter the other views to it.")
                          .arg(at, formatBytesQ(g.moduleBytes), formatBytesQ(g.bytes), source, moments));
    markFiltered();
}

} // namespace headroom
