// SPDX-License-Identifier: MIT
#pragma once

#include "core/replay/allocatorstate.h"
#include "ui/explorer/explorerview.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QScrollArea;
class QTableView;
class QToolButton;

namespace headroom {

class DeferredRebuild;
class EventListModel;
class SegmentMapWidget;

/// The allocator's segments and blocks after the selected event (the official viewer's
/// "Allocator State History"): the trace on the left, one row per event, stepped with the
/// arrow keys; the segments on the right with reserved vs allocated, pending free, cached
/// free, the largest free block and rounding waste above. The state comes from the
/// analysis' AllocatorHistory (checkpoints, no re-simulation); after the last event the
/// snapshot's own recorded blocks are shown. Search by address (hex) or frame text
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
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;

    QString summaryText() const;
    /// Blocks matching the search (tests).
    int matchCount() const;
    void setSearch(const QString& text);
    /// The state on screen (computed now if the view was hidden when the event changed).
    const AllocatorState& shownState();
    QTableView* eventTable() const;

private:
    /// The event list and the map for the data and event now (deferred while hidden).
    void refresh();
    void updateSummary();

    Selection* m_selection;
    QLabel* m_summary;
    QLineEdit* m_search;
    QTableView* m_events;
    EventListModel* m_model;
    QScrollArea* m_scroll;
    SegmentMapWidget* m_map;
    QToolButton* m_peak;
    QToolButton* m_last;
    ExplorerDataPtr m_data;
    int64_t m_event = SelectionState::kNone;
    DeferredRebuild* m_refresh = nullptr;
    bool m_modelStale = true; ///< the event list still shows the previous data
    bool m_syncing = false;
};

} // namespace headroom
