// SPDX-License-Identifier: MIT
#pragma once

#include <QDialog>

class QMenuBar;
class QTableWidget;

namespace headroom {

/// Help ▸ Keyboard Shortcuts: every menu action that has a shortcut, read from the
/// menus themselves (so the list cannot go stale), then the keys and mouse gestures of
/// the views, with a filter field.
class ShortcutsDialog : public QDialog {
    Q_OBJECT
public:
    explicit ShortcutsDialog(const QMenuBar* menus, QWidget* parent = nullptr);

    QTableWidget* table() const { return m_table; }

private:
    QTableWidget* m_table;
};

} // namespace headroom
