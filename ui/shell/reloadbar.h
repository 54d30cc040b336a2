// SPDX-License-Identifier: MIT
#pragma once

#include <QFrame>

class QLabel;

namespace headroom {

/// The bar above the views that says the open file changed on disk and offers to
/// reload it, once or from now on (KDE's message widget, in a few lines).
class ReloadBar : public QFrame {
    Q_OBJECT
public:
    explicit ReloadBar(QWidget* parent = nullptr);

    /// Sets the message for `path` (the window then shows the bar).
    void showFor(const QString& path);

signals:
    void reloadRequested();
    void alwaysReloadRequested();
    /// Any of the three buttons: the bar is gone.
    void dismissed();

private:
    QLabel* m_text;
};

} // namespace headroom
