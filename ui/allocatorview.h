// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorerview.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QScrollArea;

namespace headroom {

class SegmentMapWidget;

/// The allocator's segments and blocks in the snapshot's final state (the state at the
/// OOM when the snapshot was taken there): one row per segment, largest first, blocks
/// coloured allocated / pending free / cached free, with reserved vs allocated, rounding
/// waste and the largest free block above. Search by address (hex) or frame text
/// outlines the matching blocks.
class AllocatorView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit AllocatorView(Selection* selection, QWidget* parent = nullptr);
    ~AllocatorView() override;

    QString viewId() const override { return QStringLiteral("allocator"); }
    QString viewTitle() const override { return tr("Allocator"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState&, Selection::Fields) override {}

    QString summaryText() const;
    /// Blocks matching the search (tests).
    int matchCount() const;
    void setSearch(const QString& text);

private:
    QLabel* m_summary;
    QLineEdit* m_search;
    QScrollArea* m_scroll;
    SegmentMapWidget* m_map;
    ExplorerDataPtr m_data;
};

} // namespace headroom
