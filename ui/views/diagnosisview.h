// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QWidget>

class QTextBrowser;
class QUrl;

namespace headroom {

class DeferredRebuild;

/// The diagnosis in plain language: each finding's verdict, evidence and first move, the
/// peak, the OOMs and every iteration's peak. Event numbers are links: clicking one
/// selects that event in the other views.
class DiagnosisView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit DiagnosisView(Selection* selection, QWidget* parent = nullptr);
    ~DiagnosisView() override;

    QString viewId() const override { return QStringLiteral("diagnosis"); }
    QString viewTitle() const override { return tr("Diagnosis"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState&, Selection::Fields) override {}

    QTextBrowser* browser() const
    {
        ensureBuilt();
        return m_browser;
    }
    void render(QCPPainter* painter, const QSize& size) override;
    /// Follows a link the way a click does ("event:123").
    void openLink(const QUrl& url);
    /// The capacity finding's first move as the what-if panel's ladder has it (its measured
    /// values and levers); empty: the report's own, computed from the file alone.
    void setCapacityFirstMove(const QString& text);
    QString capacityFirstMove() const { return m_capacityFirstMove; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    /// Hidden (a background tab): the text is written when it is shown, painted or asked for.
    void ensureBuilt() const;

    Selection* m_selection;
    QTextBrowser* m_browser;
    ExplorerDataPtr m_data;
    QString m_capacityFirstMove;
    DeferredRebuild* m_rebuild = nullptr;
};

} // namespace headroom
