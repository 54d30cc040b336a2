// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QWidget>

class QCheckBox;

#include <vector>

namespace headroom {

class DeferredRebuild;

/// An icicle graph of the memory live at the selected event, by call stack: the root
/// (all live memory) on top, each frame's callees below it, widths proportional to
/// bytes. Clicking a frame sets the stack filter to the path down to it (the table and
/// the timeline follow); clicking the root clears it. The selected allocation's stack
/// is outlined.
class StackView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit StackView(Selection* selection, QWidget* parent = nullptr);
    ~StackView() override;

    QString viewId() const override { return QStringLiteral("stacks"); }
    QString viewTitle() const override { return tr("Stacks"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;

    /// Laid-out boxes (tests): node index, rectangle.
    struct Box {
        int32_t node;
        QRectF rect;
        int depth;
    };
    const std::vector<Box>& boxes() const
    {
        ensureBuilt();
        return m_boxes;
    }
    const std::vector<StackNode>& nodes() const
    {
        ensureBuilt();
        return m_nodes;
    }
    /// Frame path (outermost first) from the root to a node.
    std::vector<uint32_t> pathTo(int32_t node) const;
    /// Nodes drawn highlighted: on the stack filter's path or the selected allocation's.
    std::vector<int32_t> highlightedNodes() const;
    QSize sizeHint() const override { return {600, 400}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

private:
    void rebuild();
    /// Rebuilt now when on screen, else when it is next shown, painted or asked: a view in a
    /// background tab costs nothing while a file loads.
    void ensureBuilt() const;
    void layoutBoxes();
    int32_t nodeAt(const QPointF& pos) const;
    QString label(int32_t node) const;
    int rowHeight() const;
    int top() const;

    Selection* m_selection;
    ExplorerDataPtr m_data;
    SelectionState m_state;
    QCheckBox* m_pythonOnly = nullptr;
    std::vector<StackNode> m_nodes;
    std::vector<std::vector<int32_t>> m_children;
    std::vector<Box> m_boxes;
    std::vector<int32_t> m_filterPath;     ///< nodes on the stack filter's path
    std::vector<int32_t> m_allocationPath; ///< nodes on the selected allocation's path
    int64_t m_event = SelectionState::kNone;
    DeferredRebuild* m_rebuild = nullptr;
};

} // namespace headroom
