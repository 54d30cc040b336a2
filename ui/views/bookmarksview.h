// SPDX-License-Identifier: MIT
#pragma once

#include "ui/explorer/explorerview.h"

#include <QJsonArray>
#include <QWidget>

#include <vector>

class QPushButton;
class QTableWidget;

namespace headroom {

/// A user's note on an event, saved with the trace (the native format's user data).
struct Bookmark {
    int64_t event = 0;
    QString title;
    QString note;
};

/// Notes and bookmarks on events: a table of the bookmarks (event, where it is, title,
/// note; title and note are edited in place), "Bookmark event" (Ctrl+B) adds the selected
/// event, Delete removes the selected rows, a double click (or Enter) goes to the event.
/// The timeline draws every bookmark as a flag; the postmortem lists them.
class BookmarksView : public QWidget, public ExplorerView {
    Q_OBJECT
public:
    explicit BookmarksView(Selection* selection, QWidget* parent = nullptr);

    QString viewId() const override { return QStringLiteral("bookmarks"); }
    QString viewTitle() const override { return tr("Notes"); }
    QWidget* widget() override { return this; }
    void setData(const ExplorerDataPtr& data) override;
    void selectionChanged(const SelectionState& state, Selection::Fields fields) override;

    const std::vector<Bookmark>& bookmarks() const { return m_bookmarks; }
    /// Adds (or, for an event already bookmarked, returns) the bookmark of `event`; its row.
    int addBookmark(int64_t event, const QString& title = {}, const QString& note = {});
    void removeBookmark(int row);
    void setBookmarks(std::vector<Bookmark> bookmarks);
    QJsonArray toJson() const;
    static std::vector<Bookmark> fromJson(const QJsonArray& array);
    /// The postmortem's section (a Markdown table; empty without bookmarks).
    QString markdown() const;
    QTableWidget* table() const { return m_table; }

signals:
    void bookmarksChanged();

private:
    void rebuildTable();
    QString whereText(int64_t event) const;

    Selection* m_selection;
    QTableWidget* m_table;
    QPushButton* m_add;
    QPushButton* m_remove;
    ExplorerDataPtr m_data;
    std::vector<Bookmark> m_bookmarks; ///< by event
    int64_t m_event = SelectionState::kNone;
    bool m_filling = false;
};

} // namespace headroom
