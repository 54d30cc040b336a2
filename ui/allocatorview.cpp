// SPDX-License-Identifier: MIT
#include "ui/allocatorview.h"

#include "ui/categorystyle.h"

#include <QLocale>
#include <QHelpEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QScrollArea>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

namespace headroom {

namespace {

constexpr int kRowHeight = 16;
constexpr int kLabelWidth = 150;
constexpr size_t kMaxRows = 4000;

QColor stateColor(BlockState s)
{
    switch (s) {
    case BlockState::ActiveAllocated: return QColor(0x4e, 0x79, 0xa7);
    case BlockState::ActivePendingFree: return QColor(0xf2, 0x8e, 0x2b);
    case BlockState::Inactive: return QColor(0xd9, 0xdc, 0xde);
    case BlockState::Unknown: return QColor(0x9d, 0xa3, 0xa8);
    }
    return Qt::gray;
}

} // namespace

class SegmentMapWidget : public QWidget {
public:
    explicit SegmentMapWidget(QWidget* parent)
        : QWidget(parent)
    {
        setAutoFillBackground(true);
        setBackgroundRole(QPalette::Base);
    }

    void setData(const ExplorerDataPtr& data)
    {
        m_data = data;
        m_order.clear();
        if (m_data) {
            const auto& segs = m_data->device().segments;
            for (size_t i = 0; i < segs.size(); ++i)
                m_order.push_back(i);
            std::stable_sort(m_order.begin(), m_order.end(),
                             [&](size_t a, size_t b) { return segs[a].totalSize > segs[b].totalSize; });
            if (m_order.size() > kMaxRows)
                m_order.resize(kMaxRows);
        }
        setSearch(m_search);
        setMinimumHeight(int(std::max<size_t>(1, m_order.size())) * kRowHeight + 8);
        update();
    }

    void setSearch(const QString& text)
    {
        m_search = text.trimmed();
        m_matches.clear();
        if (!m_data || m_search.isEmpty()) {
            update();
            return;
        }
        const DeviceData& dev = m_data->device();
        bool isAddress = false;
        QString hex = m_search;
        if (hex.startsWith(QLatin1String("0x"), Qt::CaseInsensitive))
            hex = hex.mid(2);
        const qulonglong addr = hex.toULongLong(&isAddress, 16);
        const FrameTable& ft = m_data->frames();
        for (size_t b = 0; b < dev.blocks.size(); ++b) {
            const Block& block = dev.blocks[b];
            bool match = false;
            if (isAddress)
                match = addr >= block.address && addr < block.address + uint64_t(block.size);
            if (!match) {
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

    int matchCount() const { return int(m_matches.size()); }

protected:
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        const QColor text = palette().color(QPalette::WindowText);
        if (!m_data || m_order.empty()) {
            p.setPen(text);
            p.drawText(rect(), Qt::AlignCenter,
                       m_data ? tr("This snapshot has no segments (a trace without the allocator state).")
                              : tr("Open a file to see its allocator segments."));
            return;
        }
        const auto& dev = m_data->device();
        const double maxSize = double(dev.segments[m_order.front()].totalSize);
        const double width = std::max(50, this->width() - kLabelWidth - 8);
        for (size_t row = 0; row < m_order.size(); ++row) {
            const Segment& s = dev.segments[m_order[row]];
            const int y = 4 + int(row) * kRowHeight;
            p.setPen(text);
            p.drawText(QRect(4, y, kLabelWidth - 8, kRowHeight), Qt::AlignRight | Qt::AlignVCenter,
                       QStringLiteral("%1 %2").arg(formatBytesQ(s.totalSize), s.largePool ? QString() : tr("(small)")));
            const double scale = width / maxSize;
            const double x0 = kLabelWidth;
            p.fillRect(QRectF(x0, y + 1, double(s.totalSize) * scale, kRowHeight - 3), stateColor(BlockState::Inactive));
            for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount && b < dev.blocks.size(); ++b) {
                const Block& block = dev.blocks[b];
                const double bx = x0 + double(block.address - s.address) * scale;
                const double bw = std::max(1.0, double(block.size) * scale);
                const QRectF r(bx, y + 1, bw, kRowHeight - 3);
                p.fillRect(r, stateColor(block.state));
                if (std::binary_search(m_matches.begin(), m_matches.end(), size_t(b))) {
                    p.setPen(QPen(QColor(220, 0, 0), 2));
                    p.drawRect(r);
                }
            }
        }
    }

    bool event(QEvent* e) override
    {
        if (e->type() == QEvent::ToolTip && m_data) {
            auto* help = static_cast<QHelpEvent*>(e);
            const int row = (help->pos().y() - 4) / kRowHeight;
            if (row >= 0 && size_t(row) < m_order.size()) {
                const auto& dev = m_data->device();
                const Segment& s = dev.segments[m_order[size_t(row)]];
                const double scale = std::max(50, width() - kLabelWidth - 8) / double(dev.segments[m_order.front()].totalSize);
                const double addrAt = double(help->pos().x() - kLabelWidth) / scale;
                QString tip = tr("segment 0x%1: %2, allocated %3, stream %4")
                                  .arg(QString::number(s.address, 16), formatBytesQ(s.totalSize),
                                       formatBytesQ(s.allocatedSize))
                                  .arg(s.stream);
                for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount && b < dev.blocks.size(); ++b) {
                    const Block& block = dev.blocks[b];
                    if (addrAt >= double(block.address - s.address) && addrAt < double(block.address - s.address + uint64_t(block.size))) {
                        static const char* const kStates[] = {"allocated", "pending free", "cached free", "unknown"};
                        tip += tr("\nblock 0x%1: %2 %3 (requested %4)")
                                   .arg(QString::number(block.address, 16), formatBytesQ(block.size),
                                        QString::fromLatin1(kStates[int(block.state)]), formatBytesQ(block.requestedSize));
                        const auto top = m_data->frames().topFrames(block.stack, 3);
                        for (uint32_t f : top)
                            tip += QStringLiteral("\n  ") + QString::fromStdString(m_data->frames().formatFrame(f));
                    }
                }
                QToolTip::showText(help->globalPos(), tip, this);
            }
            return true;
        }
        return QWidget::event(e);
    }

private:
    ExplorerDataPtr m_data;
    std::vector<size_t> m_order;
    std::vector<size_t> m_matches; ///< block indices, ascending
    QString m_search;
};

AllocatorView::AllocatorView(Selection*, QWidget* parent)
    : QWidget(parent)
    , m_summary(new QLabel(this))
    , m_search(new QLineEdit(this))
    , m_scroll(new QScrollArea(this))
    , m_map(new SegmentMapWidget(this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_search->setPlaceholderText(tr("Search by address (0x\u2026) or frame text"));
    m_search->setClearButtonEnabled(true);
    connect(m_search, &QLineEdit::textChanged, this, &AllocatorView::setSearch);
    m_scroll->setWidget(m_map);
    m_scroll->setWidgetResizable(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_summary);
    layout->addWidget(m_search);
    layout->addWidget(m_scroll, 1);
    setData(nullptr);
}

AllocatorView::~AllocatorView() = default;

void AllocatorView::setData(const ExplorerDataPtr& data)
{
    m_data = data;
    m_map->setData(data);
    if (!m_data) {
        m_summary->setText(tr("Allocator: waiting for a file and its analysis."));
        return;
    }
    const Fragmentation& f = m_data->analysis.fragmentation;
    auto swatch = [](BlockState s) {
        return QStringLiteral("<span style='color:%1'>\u25A0</span>").arg(stateColor(s).name());
    };
    m_summary->setText(
        tr("<b>Final state: %1 segments, reserved %2, allocated %3</b> (%4 of reserved).<br>"
           "%5 allocated &nbsp; %6 pending free %7 &nbsp; %8 cached free %9 in %10 blocks, largest %11 &nbsp; "
           "rounding waste %12")
            .arg(QLocale().toString(qulonglong(m_data->device().segments.size())), formatBytesQ(f.reserved),
                 formatBytesQ(f.allocated),
                 f.reserved > 0 ? QStringLiteral("%1%").arg(100.0 * double(f.allocated) / double(f.reserved), 0, 'f', 1)
                                : QStringLiteral("\u2013"),
                 swatch(BlockState::ActiveAllocated), swatch(BlockState::ActivePendingFree),
                 formatBytesQ(f.pendingFreeBytes), swatch(BlockState::Inactive), formatBytesQ(f.inactiveBytes))
            .arg(QLocale().toString(qlonglong(f.inactiveBlocks)), formatBytesQ(f.largestFreeBlock),
                 formatBytesQ(f.internalBytes)));
}

QString AllocatorView::summaryText() const
{
    return m_summary->text();
}

int AllocatorView::matchCount() const
{
    return m_map->matchCount();
}

void AllocatorView::setSearch(const QString& text)
{
    if (m_search->text() != text)
        m_search->setText(text); // emits, comes back here
    m_map->setSearch(text);
}

} // namespace headroom
