// SPDX-License-Identifier: MIT
#include "ui/views/segmentmapwidget.h"

#include "ui/plot/categorystyle.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace headroom {

SegmentMapWidget::SegmentMapWidget(QWidget* parent)
    : QWidget(parent)
{
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
}

QColor SegmentMapWidget::stateColor(BlockState s)
{
    switch (s) {
    case BlockState::ActiveAllocated: return QColor(0x4e, 0x79, 0xa7);
    case BlockState::ActivePendingFree: return QColor(0xf2, 0x8e, 0x2b);
    case BlockState::Inactive: return QColor(0xd9, 0xdc, 0xde);
    case BlockState::Unknown: return QColor(0x9d, 0xa3, 0xa8);
    }
    return Qt::gray;
}

void SegmentMapWidget::setState(const ExplorerDataPtr& data, AllocatorState state)
{
    m_data = data;
    m_state = std::move(state);
    m_order.clear();
    for (size_t i = 0; i < m_state.segments.size(); ++i)
        m_order.push_back(i);
    std::stable_sort(m_order.begin(), m_order.end(),
                     [&](size_t a, size_t b) { return m_state.segments[a].size > m_state.segments[b].size; });
    if (m_order.size() > kMaxRows)
        m_order.resize(kMaxRows);
    setSearch(m_search);
    setMinimumHeight(int(std::max<size_t>(1, m_order.size())) * kRowHeight + 8);
    update();
}

void SegmentMapWidget::setSearch(const QString& text)
{
    m_search = text.trimmed();
    m_matches.clear();
    if (!m_data || m_search.isEmpty()) {
        update();
        return;
    }
    bool isAddress = false;
    QString hex = m_search;
    if (hex.startsWith(QLatin1String("0x"), Qt::CaseInsensitive))
        hex = hex.mid(2);
    const qulonglong addr = hex.toULongLong(&isAddress, 16);
    const FrameTable& ft = m_data->frames();
    for (size_t b = 0; b < m_state.blocks.size(); ++b) {
        const StateBlock& block = m_state.blocks[b];
        bool match = isAddress && addr >= block.address && addr < block.address + uint64_t(block.size);
        if (!match && block.state != BlockState::Inactive) {
            for (uint32_t f : ft.stack(block.stack))
                if (QString::fromStdString(ft.formatFrame(f)).contains(m_search, Qt::CaseInsensitive)) {
                    match = true;
                    break;
                }
        }
        if (match)
            m_matches.push_back(b);
    }
    update();
}

QColor SegmentMapWidget::blockColor(const StateBlock& block) const
{
    if (block.state == BlockState::ActiveAllocated && m_data && block.allocation != StateBlock::kNoAllocation &&
        block.allocation < m_data->analysis.classes.size())
        return categoryColor(m_data->analysis.classes[block.allocation].category);
    return stateColor(block.state);
}

double SegmentMapWidget::scale() const
{
    if (m_order.empty())
        return 1;
    const double width = std::max(50, this->width() - kLabelWidth - 8);
    return width / double(std::max<int64_t>(1, m_state.segments[m_order.front()].size));
}

void SegmentMapWidget::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    const QColor text = palette().color(QPalette::WindowText);
    if (!m_data || m_order.empty()) {
        p.setPen(text);
        p.drawText(rect(), Qt::AlignCenter,
                   m_data ? tr("No segments are reserved at this event.") : tr("Open a file to see its allocator segments."));
        return;
    }
    const double sc = scale();
    const double x0 = kLabelWidth;
    for (size_t row = 0; row < m_order.size(); ++row) {
        const StateSegment& s = m_state.segments[m_order[row]];
        const int y = 4 + int(row) * kRowHeight;
        p.setPen(text);
        p.drawText(QRect(4, y, kLabelWidth - 8, kRowHeight), Qt::AlignRight | Qt::AlignVCenter,
                   QStringLiteral("%1 %2%3").arg(formatBytesQ(s.size), s.largePool ? QString() : tr("(small)"),
                                                 s.privatePool() ? tr("pool %1,%2").arg(s.poolId.first).arg(s.poolId.second)
                                                                 : QString()));
        p.fillRect(QRectF(x0, y + 1, std::max(1.0, double(s.size) * sc), kRowHeight - 3), stateColor(BlockState::Inactive));
        for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b) {
            const StateBlock& block = m_state.blocks[b];
            if (block.state == BlockState::Inactive && !std::binary_search(m_matches.begin(), m_matches.end(), size_t(b)))
                continue;
            const double bx = x0 + double(block.address - s.address) * sc;
            const double bw = std::max(1.0, double(block.size) * sc);
            const QRectF r(bx, y + 1, bw, kRowHeight - 3);
            if (block.state != BlockState::Inactive) {
                p.fillRect(r, blockColor(block));
                if (block.state == BlockState::ActivePendingFree)
                    p.fillRect(r, QBrush(QColor(120, 40, 0), Qt::BDiagPattern));
                const double waste = double(std::max<int64_t>(0, block.size - block.requested)) * sc;
                if (waste >= 1.0)
                    p.fillRect(QRectF(bx + bw - waste, y + 1, waste, kRowHeight - 3), blockColor(block).darker(180));
                p.setPen(QPen(palette().color(QPalette::Base), 0));
                if (bw > 3)
                    p.drawLine(QPointF(bx, y + 1), QPointF(bx, y + kRowHeight - 2)); // block boundary
            }
            if (std::binary_search(m_matches.begin(), m_matches.end(), size_t(b))) {
                p.setPen(QPen(QColor(220, 0, 0), 2));
                p.drawRect(r);
            }
        }
        if (s.privatePool()) { // a CUDA graph's or MemPool's segment: outlined, apart from the default pool
            p.setPen(QPen(text, 1, Qt::DashLine));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(x0 - 1, y, std::max(1.0, double(s.size) * sc) + 2, kRowHeight - 1));
        }
    }
}

int64_t SegmentMapWidget::blockAt(QPoint pos, size_t* rowOut) const
{
    const int row = (pos.y() - 4) / kRowHeight;
    if (row < 0 || size_t(row) >= m_order.size())
        return -1;
    *rowOut = size_t(row);
    const StateSegment& s = m_state.segments[m_order[size_t(row)]];
    const double offset = double(pos.x() - kLabelWidth) / scale();
    for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b) {
        const StateBlock& block = m_state.blocks[b];
        const double from = double(block.address - s.address);
        if (offset >= from && offset < from + double(block.size))
            return b;
    }
    return -1;
}

bool SegmentMapWidget::event(QEvent* e)
{
    if (e->type() != QEvent::ToolTip || !m_data)
        return QWidget::event(e);
    auto* help = static_cast<QHelpEvent*>(e);
    size_t row = 0;
    const int64_t b = blockAt(help->pos(), &row);
    if (row >= m_order.size() || (b < 0 && (help->pos().y() - 4) / kRowHeight != int(row))) {
        QToolTip::hideText();
        return true;
    }
    const StateSegment& s = m_state.segments[m_order[row]];
    QString tip = tr("segment 0x%1: %2, %3 in use, stream %4%5")
                      .arg(QString::number(s.address, 16), formatBytesQ(s.size), formatBytesQ(s.allocated))
                      .arg(s.stream)
                      .arg(s.beforeWindow ? tr(", reserved before the trace began") : QString());
    if (b >= 0) {
        const StateBlock& block = m_state.blocks[size_t(b)];
        static const char* const kStates[] = {"allocated", "pending free", "cached free", "unknown"};
        tip += tr("\nblock 0x%1: %2 %3").arg(QString::number(block.address, 16), formatBytesQ(block.size),
                                             QString::fromLatin1(kStates[int(block.state)]));
        if (block.state != BlockState::Inactive) {
            tip += tr(" (requested %1)").arg(formatBytesQ(block.requested));
            if (block.allocation != StateBlock::kNoAllocation && block.allocation < m_data->analysis.classes.size())
                tip += QStringLiteral(", ") + categoryDisplayName(m_data->analysis.classes[block.allocation].category);
            for (uint32_t f : m_data->frames().topFrames(block.stack, 3))
                tip += QStringLiteral("\n  ") + QString::fromStdString(m_data->frames().formatFrame(f));
        }
    }
    QToolTip::showText(help->globalPos(), tip, this);
    return true;
}

} // namespace headroom
