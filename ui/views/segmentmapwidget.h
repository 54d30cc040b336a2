// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocatorstate.h"
#include "ui/explorer/explorerdata.h"

#include <QWidget>

#include <vector>

namespace headroom {

/// Paints one AllocatorState: a row per segment, largest first (as the official viewer),
/// blocks to scale inside it. Allocated blocks take their tensor category's colour,
/// pending-free blocks are hatched orange, cached free space is light grey and the
/// rounding waste at a block's end is drawn darker. Tooltips name the segment, the
/// block and its top frames; blocks matching the search are outlined in red.
class SegmentMapWidget : public QWidget {
    Q_OBJECT
public:
    static constexpr int kRowHeight = 16;
    static constexpr int kLabelWidth = 150;
    static constexpr size_t kMaxRows = 4000;

    explicit SegmentMapWidget(QWidget* parent = nullptr);

    void setState(const ExplorerDataPtr& data, AllocatorState state);
    const AllocatorState& state() const { return m_state; }
    void setSearch(const QString& text);
    int matchCount() const { return int(m_matches.size()); }

    static QColor stateColor(BlockState s);

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QColor blockColor(const StateBlock& block) const;
    double scale() const;
    /// The block under a point, or -1.
    int64_t blockAt(QPoint pos, size_t* row) const;

    ExplorerDataPtr m_data;
    AllocatorState m_state;
    std::vector<size_t> m_order;   ///< segment indices, largest first
    std::vector<size_t> m_matches; ///< block indices, ascending
    QString m_search;
};

} // namespace headroom
