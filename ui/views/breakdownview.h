// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/livegroups.h"
#include "ui/explorer/explorerview.h"

#include <memory>
#include <vector>

#include <QWidget>

class QCustomPlot;
class QCPAxisRect;
class QCPTextElement;

namespace headroom {

/// Live bytes at the selected event as horizontal bars, by tensor category and by phase
/// of birth, each with its size and share. With a range selected it shows the range's
/// maximum (the event in it with the most memory allocated). With the user's categories, a third
/// column shows what each of their rules claims.
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

    /// The user's categories (Settings ▸ Your Categories): a third column of bars, what each
    /// rule claims at the shown event and what none does. Null: none.
    void setUserCategories(std::shared_ptr<const UserCategories> rules);
    /// What the third column shows (tests): empty without rules.
    const std::vector<UserCategoryGroup>& userCategories() const { return m_userGroups; }
    const UserCategories* userCategoryRules() const { return m_rules.get(); }

    /// What the bars show (tests).
    const Breakdown& breakdown() const { return m_breakdown; }
    int64_t shownEvent() const { return m_event; }
    QString heading() const;
    QCustomPlot* plot() const { return m_plot; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    void fillUserCategories(const QColor& text);
    void showUserColumn(bool on);
    void applyPalette();

    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPAxisRect* m_categoryRect;
    QCPAxisRect* m_phaseRect;
    QCPAxisRect* m_userRect;
    QCPTextElement* m_userTitle;
    std::shared_ptr<const UserCategories> m_rules;
    std::vector<UserCategoryGroup> m_userGroups;
    ExplorerDataPtr m_data;
    SelectionState m_selection;
    Breakdown m_breakdown;
    int64_t m_event = SelectionState::kNone;
};

} // namespace headroom
