// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QWidget>

class QScrollArea;

namespace headroom {

class WhatIfPanel;

/// The what-if panel as an explorer view (a dock tabbed with the breakdown and the
/// diagnosis): it calibrates on the explorer's analysis of the shown device, restores the
/// settings saved with the trace (the native format's user data) once calibrated, and
/// reports every change so the window can mark the file as modified.
class WhatIfView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit WhatIfView(Selection* selection, QWidget* parent = nullptr);

    QString viewId() const override { return QStringLiteral("whatif"); }
    QString viewTitle() const override { return tr("What-if"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState&, Selection::Fields) override {}
    /// The panel at the export size, without the scroll bars its dock may need.
    void render(QCPPainter* painter, const QSize& size) override;
    void prepareExport() override;

    WhatIfPanel* panel() const { return m_panel; }
    /// Settings to restore with the next data (from the opened file's user data).
    void setPendingSettings(const QString& json) { m_pending = json; }

signals:
    void settingsChanged(const QString& json);

private:
    WhatIfPanel* m_panel;
    QScrollArea* m_scroll;
    ExplorerDataPtr m_data;
    QString m_pending;
};

} // namespace headroom
