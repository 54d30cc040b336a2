// SPDX-License-Identifier: MIT
#include "ui/views/stackview.h"

#include "ui/explorer/allocationfilter.h"

#include "core/analysis/timelinebands.h"
#include "ui/explorer/deferredrebuild.h"
#include "ui/plot/categorystyle.h"

#include <QCheckBox>
#include <QLocale>
#include <QSignalBlocker>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace headroom {

namespace {

constexpr double kMinBoxWidth = 1.0;

/// A stable pastel colour per source file, dark text on it reads on any palette.
QColor fileColor(const std::string& file)
{
    const size_t h = std::hash<std::string>{}(file);
    return QColor::fromHsl(int(h % 360), 150, 200);
}

} // namespace

StackView::StackView(Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_selection(selection)
{
    setMouseTracking(true);
    setMinimumSize(300, 150);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    m_rebuild = new DeferredRebuild(this, [this] { rebuild(); });
    // Top right, in the heading's row: the user's code first, the C++ a click away.
    m_pythonOnly = new QCheckBox(tr("Python frames only"), this);
    m_pythonOnly->setObjectName(QStringLiteral("stackPythonOnly"));
    m_pythonOnly->setChecked(true);
    m_pythonOnly->setToolTip(tr("Show only the Python frames of stacks that have any (the C++ between and "
                                "below them hidden); stacks of C++ frames alone keep them"));
    connect(m_pythonOnly, &QCheckBox::toggled, this, [this](bool on) {
        if (m_selection)
            m_selection->setPythonOnly(on);
    });
}

StackView::~StackView() = default;

void StackView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    // The explorer follows new data with selectionChanged(All), which rebuilds: building
    // the tree here too would do it twice.
    m_rebuild->invalidate();
    if (!data)
        m_rebuild->request();
    update();
}

void StackView::ensureBuilt() const
{
    m_rebuild->ensure();
}

void StackView::selectionChanged(const SelectionState& state, Selection::Fields fields)
{
    m_state = state;
    {
        const QSignalBlocker block(m_pythonOnly);
        m_pythonOnly->setChecked(state.pythonOnly);
    }
    if (fields & (Selection::Event | Selection::Range | Selection::Device | Selection::Filters | Selection::Allocation))
        m_rebuild->request(); // the paths are recomputed from the tree
}

int StackView::rowHeight() const
{
    return fontMetrics().height() + 6;
}

int StackView::top() const
{
    return fontMetrics().height() + 10; // the heading
}

void StackView::rebuild()
{
    m_nodes.clear();
    m_children.clear();
    m_filterPath.clear();
    m_allocationPath.clear();
    m_event = SelectionState::kNone;
    if (m_data) {
        const MemoryTimeline& tl = m_data->timeline();
        if (m_state.hasRange())
            m_event = maxEventInRange(tl, m_state.rangeFirst, m_state.rangeLast);
        else
            m_event = m_state.hasEvent() ? m_state.event : tl.peakEventIndex;
        // The module filter narrows the tree; the stack filter outlines a path in it.
        SelectionState byModule = m_state;
        byModule.stackFilter.clear();
        const AllocationFilter filter(*m_data, byModule);
        m_nodes = m_data->analysis.stackTreeAt(tl, m_data->frames(), m_event, m_state.pythonOnly, filter.predicate());
        m_children.resize(m_nodes.size());
        for (size_t i = 1; i < m_nodes.size(); ++i)
            m_children[size_t(m_nodes[i].parent)].push_back(int32_t(i));
        for (auto& c : m_children)
            std::sort(c.begin(), c.end(), [this](int32_t a, int32_t b) { return m_nodes[size_t(a)].bytes > m_nodes[size_t(b)].bytes; });
        // Follow a frame path down the tree.
        auto follow = [this](const std::vector<uint32_t>& path, std::vector<int32_t>& out) {
            int32_t at = 0;
            out.push_back(0);
            for (uint32_t frame : path) {
                const auto& kids = m_children[size_t(at)];
                const auto it = std::find_if(kids.begin(), kids.end(), [&](int32_t k) { return m_nodes[size_t(k)].frame == frame; });
                if (it == kids.end())
                    break;
                at = *it;
                out.push_back(at);
            }
        };
        if (!m_state.stackFilter.empty())
            follow(m_state.stackFilter, m_filterPath);
        if (m_state.allocation >= 0 && size_t(m_state.allocation) < tl.allocations.size()) {
            const FrameTable& ft = m_data->frames();
            follow(shownFrames(ft, tl.allocations[size_t(m_state.allocation)].stack, m_state.pythonOnly),
                   m_allocationPath);
        }
    }
    layoutBoxes();
    update();
}

void StackView::layoutBoxes()
{
    m_boxes.clear();
    if (m_nodes.empty() || m_nodes[0].bytes <= 0)
        return;
    const double width = std::max(1, this->width() - 2);
    const double scale = width / double(m_nodes[0].bytes);
    const int h = rowHeight();
    // Breadth-first is not needed: a stack of (node, x, depth) keeps it iterative.
    struct Item {
        int32_t node;
        double x;
        int depth;
    };
    std::vector<Item> work{{0, 1.0, 0}};
    while (!work.empty()) {
        const Item it = work.back();
        work.pop_back();
        const double w = double(m_nodes[size_t(it.node)].bytes) * scale;
        const double y = top() + double(it.depth) * h;
        if (y > height())
            continue;
        m_boxes.push_back({it.node, QRectF(it.x, y, w, h - 1), it.depth});
        double x = it.x;
        for (int32_t c : m_children[size_t(it.node)]) {
            const double cw = double(m_nodes[size_t(c)].bytes) * scale;
            if (cw < kMinBoxWidth)
                break; // sorted by size: the rest are smaller still
            work.push_back({c, x, it.depth + 1});
            x += cw;
        }
    }
}

std::vector<uint32_t> StackView::pathTo(int32_t node) const
{
    ensureBuilt();
    std::vector<uint32_t> path;
    for (int32_t at = node; at > 0; at = m_nodes[size_t(at)].parent)
        path.push_back(m_nodes[size_t(at)].frame);
    std::reverse(path.begin(), path.end());
    return path;
}

std::vector<int32_t> StackView::highlightedNodes() const
{
    ensureBuilt();
    std::vector<int32_t> out = m_filterPath;
    out.insert(out.end(), m_allocationPath.begin(), m_allocationPath.end());
    return out;
}

QString StackView::label(int32_t node) const
{
    if (node == 0)
        return tr("all live memory: %1 in %2 allocations")
            .arg(formatBytesQ(m_nodes[0].bytes), QLocale().toString(qlonglong(m_nodes[0].count)));
    const FrameTable& ft = m_data->frames();
    const Frame& f = ft.frame(m_nodes[size_t(node)].frame);
    const QString name = QString::fromStdString(std::string(ft.strings().get(f.name)));
    const QString file = QString::fromStdString(std::string(ft.strings().get(f.file)));
    const QString base = file.section(QLatin1Char('/'), -1);
    return QStringLiteral("%1 (%2:%3) %4").arg(name, base).arg(f.line).arg(formatBytesQ(m_nodes[size_t(node)].bytes));
}

void StackView::paintEvent(QPaintEvent*)
{
    ensureBuilt();
    QPainter p(this);
    const QColor text = palette().color(QPalette::WindowText);
    p.setPen(text);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    const QRect headRect(4, 2, width() - 8, top() - 4);
    if (!m_data) {
        p.drawText(headRect, Qt::AlignLeft | Qt::AlignVCenter, tr("Stacks: waiting for a file and its analysis"));
        return;
    }
    QString head = tr("Live memory by call stack at event %1").arg(m_event);
    if (!m_state.moduleFilter.empty())
        head += tr(", in module %1").arg(QString::fromStdString(m_state.moduleLabel));
    if (!m_state.stackFilter.empty())
        head += tr("  \u00B7  filtered to the outlined frame (click the top bar to clear)");
    else
        head += tr("  \u00B7  click a frame to filter the table and timeline");
    // Elided short of the "Python frames only" box at the right, which it would run under.
    const QRect textRect = headRect.adjusted(0, 0, -(m_pythonOnly->sizeHint().width() + 12), 0);
    p.drawText(textRect, Qt::AlignLeft | Qt::AlignVCenter, p.fontMetrics().elidedText(head, Qt::ElideRight, textRect.width()));
    p.setFont(font());
    if (m_boxes.empty()) {
        p.drawText(rect().adjusted(0, top(), 0, 0), Qt::AlignCenter, tr("Nothing is live at this event."));
        return;
    }
    const FrameTable& ft = m_data->frames();
    auto highlighted = [this](int32_t n) {
        return std::find(m_filterPath.begin() + (m_filterPath.empty() ? 0 : 1), m_filterPath.end(), n)
               != m_filterPath.end();
    };
    for (const Box& b : m_boxes) {
        QColor fill = b.node == 0 ? QColor(0xc8, 0xcc, 0xd0)
                                  : fileColor(std::string(ft.strings().get(ft.frame(m_nodes[size_t(b.node)].frame).file)));
        const bool onAllocation = std::find(m_allocationPath.begin(), m_allocationPath.end(), b.node) != m_allocationPath.end()
                                  && m_allocationPath.size() > 1;
        if (!m_filterPath.empty() && !highlighted(b.node) && b.node != 0) {
            // Outside the filter: dimmed, unless it is below the filtered frame.
            int32_t at = b.node;
            bool below = false;
            while (at > 0) {
                if (at == m_filterPath.back()) {
                    below = true;
                    break;
                }
                at = m_nodes[size_t(at)].parent;
            }
            if (!below)
                fill = fill.lighter(125), fill.setAlpha(110);
        }
        p.fillRect(b.rect, fill);
        if (highlighted(b.node) || onAllocation) {
            p.setPen(QPen(onAllocation ? QColor(0, 150, 136) : QColor(20, 20, 20), 2));
            p.drawRect(b.rect.adjusted(1, 1, -1, -1));
        }
        if (b.rect.width() > 30) {
            p.setPen(QColor(20, 20, 20));
            const QRectF tr = b.rect.adjusted(3, 0, -2, 0);
            p.drawText(tr, Qt::AlignLeft | Qt::AlignVCenter, fontMetrics().elidedText(label(b.node), Qt::ElideRight, int(tr.width())));
        }
    }
}

void StackView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    const QSize hint = m_pythonOnly->sizeHint();
    m_pythonOnly->setGeometry(width() - hint.width() - 6, (top() - hint.height()) / 2, hint.width(), hint.height());
    layoutBoxes();
}

int32_t StackView::nodeAt(const QPointF& pos) const
{
    for (const Box& b : m_boxes)
        if (b.rect.contains(pos))
            return b.node;
    return -1;
}

void StackView::mousePressEvent(QMouseEvent* event)
{
    const int32_t node = nodeAt(event->position());
    if (node < 0 || !m_selection)
        return;
    m_selection->setStackFilter(pathTo(node));
}

bool StackView::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int32_t node = nodeAt(help->pos());
        if (node < 0 || !m_data) {
            QToolTip::hideText();
            return true;
        }
        const StackNode& n = m_nodes[size_t(node)];
        QString text = node == 0 ? label(0) : QString::fromStdString(m_data->frames().formatFrame(n.frame));
        const double share = m_nodes[0].bytes > 0 ? 100.0 * double(n.bytes) / double(m_nodes[0].bytes) : 0;
        text += QStringLiteral("\n") + tr("%1 (%2% of live memory) in %3 allocations")
                                           .arg(formatBytesQ(n.bytes))
                                           .arg(share, 0, 'f', 1)
                                           .arg(QLocale().toString(qlonglong(n.count)));
        QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(event);
}

} // namespace headroom
