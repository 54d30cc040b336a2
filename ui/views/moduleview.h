// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QWidget>

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace headroom {

class DeferredRebuild;
struct LiveGroups;
struct ModuleForwardWindows;

/// What is alive at the selected event (the peak until one is selected) by module, with its
/// bytes per tensor category, as PyTorch's MemTracker tabulates it. Module names come from a
/// Headroom recorder where the file has them (`headroom_tensor`), as a tree of qualified
/// names whose rows include their children; else each module is the frame its forward was
/// called from (Module._call_impl's callee), listed flat.
class ModuleView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit ModuleView(Selection* selection, QWidget* parent = nullptr);
    ~ModuleView() override;

    QString viewId() const override { return QStringLiteral("modules"); }
    QString viewTitle() const override { return tr("Modules"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;
    void render(QCPPainter* painter, const QSize& size) override;

    QTreeWidget* tree() const;
    QString headline() const;
    /// The key a row filters to (core/analysis/moduleof.h), as a click on it sets it.
    static QString filterKey(const QTreeWidgetItem* item);

private:
    void rebuild();
    void fill(const LiveGroups& groups, const ModuleForwardWindows& windows);
    void toggleFilter(QTreeWidgetItem* item);
    void markFiltered();

    Selection* m_selection;
    std::string m_filter; ///< the selection's module filter
    std::string m_filterLabel;
    ExplorerDataPtr m_data;
    int64_t m_event = -1;
    bool m_followPeak = true;
    QLabel* m_header;
    QLabel* m_filterNote = nullptr; ///< which module the other views are filtered to
    QTreeWidget* m_tree;
    DeferredRebuild* m_rebuild = nullptr;
};

} // namespace headroom
