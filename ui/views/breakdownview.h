// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QWidget>

class QCustomPlot;
class QCPAxisRect;
class QCPTextElement;

namespace headroom {

/// Live bytes at the selected event as horizontal bars, by tensor category and by phase
/// of birth, each with its size and share. With a range selected it shows the range's
/// maximum (the event in it with the most memory allocated).
class BreakdownView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit BreakdownView(Selection* selection, QWidget* parent = nullptr);
    ~BreakdownView() override;

    QString viewId() const override { return QStringLiteral("breakdown"); }
    QString viewTitle() const override { return tr("Breakdown"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;
    void render(QCPPainter* painter, const QSize& size) override;

    /// What the bars show (tests).
    const Breakdown& breakdown() const { return m_breakdown; }
    int64_t shownEvent() const { return m_event; }
    QString heading() const;
    QCustomPlot* plot() const { return m_plot; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    void applyPalette();

    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPAxisRect* m_categoryRect;
    QCPAxisRect* m_phaseRect;
    ExplorerDataPtr m_data;
    SelectionState m_selection;
    Breakdown m_breakdown;
    int64_t m_event = SelectionState::kNone;
};

} // namespace headroom
