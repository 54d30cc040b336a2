// SPDX-License-Identifier: MIT
#include "ui/views/moduleview.h"

#include "core/analysis/livegroups.h"
#include "core/util/textlayout.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <map>

namespace headroom {

namespace {

constexpr int kTotalColumn = 1, kCountColumn = 2, kFirstCategoryColumn = 3;
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

void addChildren(QTreeWidgetItem* item, const Node& n, const std::vector<TensorCategory>& shown)
{
    for (const auto& [name, child] : n.children)
        addChildren(addItem(item, nullptr, QString::fromStdString(name), child, shown), child, shown);
}

} // namespace

ModuleView::ModuleView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_header(new QLabel(this))
    , m_tree(new QTreeWidget(this))
{
    (void)selection; // read through selectionChanged
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_header->setWordWrap(true);
    m_header->setTextFormat(Qt::PlainText);
    layout->addWidget(m_header);
    layout->addWidget(m_tree, 1);
    m_tree->setObjectName(QStringLiteral("moduleTree"));
    m_tree->setSortingEnabled(true);
    m_tree->setUniformRowHeights(true);
    m_tree->header()->setStretchLastSection(false);
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
    if (!(fields & Selection::Event) || !m_data)
        return;
    const int64_t event = state.hasEvent() ? state.event : m_data->timeline().peakEventIndex;
    if (event == m_event && !m_followPeak)
        return;
    m_followPeak = !state.hasEvent();
    m_event = event;
    m_rebuild->request();
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
    fill(LiveGroups::at(*m_data->trace, m_data->deviceIndex, m_data->analysis, m_event, kAllModules, 1));
}

void ModuleView::fill(const LiveGroups& g)
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
    QStringList headers{tr("Module"), tr("Total"), tr("Count")};
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
    addChildren(m_tree->invisibleRootItem(), named, shown);
    for (const ModuleGroup* m : frames) {
        Node n;
        n.add(*m);
        QTreeWidgetItem* item = addItem(nullptr, m_tree, QString::fromStdString(compactFrame(m->forward)), n, shown);
        item->setToolTip(0, tr("No module name recorded: the module whose forward is %1")
                                .arg(QString::fromStdString(m->forward)));
    }
    if (outside.bytes > 0) {
        QTreeWidgetItem* item = addItem(nullptr, m_tree, tr("(outside any module's forward)"), outside, shown);
        item->setToolTip(0, tr("Allocated where no nn.Module forward was running: parameters, gradients, "
                               "optimizer state, the loss, the backward's temporaries"));
    }
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(kTotalColumn, Qt::DescendingOrder);
    m_tree->expandToDepth(2);
    for (int c = 0; c < m_tree->columnCount(); ++c)
        m_tree->resizeColumnToContents(c);

    const QString at = g.event == m_data->timeline().peakEventIndex ? tr("the peak (event %1)").arg(g.event)
                                                                      : tr("event %1").arg(g.event);
    QString source = g.recordedModuleBytes > 0
                         ? tr("names from the recorder for %1").arg(formatBytesQ(g.recordedModuleBytes))
                         : tr("no module names in the file: each module is the frame its forward was called from "
                              "(record with python/headroom_record.py for names)");
    m_header->setText(tr("At %1: %2 of %3 alive under a module's forward; %4.")
                          .arg(at, formatBytesQ(g.moduleBytes), formatBytesQ(g.bytes), source));
}

} // namespace headroom
