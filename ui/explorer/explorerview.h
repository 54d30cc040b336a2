// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerdata.h"
#include "ui/explorer/selection.h"

#include <QString>

class QCPPainter;
class QSize;
class QWidget;

namespace headroom {

/// The one small interface every explorer view implements (massif-visualizer's
/// DocumentTabInterface). A view gets the shared Selection in its constructor and calls
/// its setters for what the user does there; the composition root hands every view the
/// data and every selection change, so views never talk to each other.
class ExplorerView {
public:
    virtual ~ExplorerView() = default;

    /// Stable id: dock object names, `--view NAME`, export file names.
    virtual QString viewId() const = 0;
    virtual QString viewTitle() const = 0;
    virtual QWidget* widget() = 0;

    /// Whether a view's widget can be seen now: shown and not hidden behind another tab
    /// (a background dock tab can count as visible with nothing of it on screen). Views
    /// that are costly to fill defer the work until they are painted.
    static bool onScreen(const QWidget* w);

    /// New analysis (null: no file, or the analysis is still running).
    virtual void setData(const ExplorerDataPtr& data) = 0;
    /// The shared selection changed; `fields` says what.
    virtual void selectionChanged(const SelectionState& state, Selection::Fields fields) = 0;

    /// Draws the view for export at `size` (vector output where the view can: SVG, PDF).
    /// The default renders the widget tree, scaled.
    virtual void render(QCPPainter* painter, const QSize& size);
    /// Before an export of several views: starts in the background what render() will need
    /// (the what-if panel's allocator replay), so it runs while the others are drawn.
    virtual void prepareExport() {}
    /// The size an export uses by default.
    virtual QSize exportSize() const;
};

} // namespace headroom
