// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/ladder/whatifladder.h"

#include <QWidget>

#include <optional>

class QComboBox;
class QListWidget;
class QListWidgetItem;
class QPushButton;

namespace headroom {

/// The what-if panel's "Make it fit" section: its heading and controls, and the rungs of a
/// ladder (built in core, whatifladder.h) as a list to click. It renders and asks; the panel
/// builds the ladder and applies a rung.
class LadderSection : public QWidget {
    Q_OBJECT
public:
    explicit LadderSection(QWidget* parent = nullptr);

    /// Shows `ladder`'s warnings and rungs (green where the rung fits); clear() empties it.
    void setLadder(const Ladder& ladder);
    void clear();
    /// Why there is no ladder.
    void showMessage(const QString& text);
    /// A ladder is being built off the GUI thread.
    void showPending();
    /// The currency spent first, as the combo shows it (no signal).
    void showSpendFirst(std::optional<Currency> currency);

signals:
    void rebuildRequested();
    void constantsRequested();
    void compareRequested();
    void spendFirstChosen(std::optional<Currency> currency);
    void rungClicked(int index);

private:
    void onItemClicked(QListWidgetItem* item);

    QListWidget* m_list = nullptr;
    QComboBox* m_spendFirst = nullptr;
    bool m_updating = false;
};

} // namespace headroom
