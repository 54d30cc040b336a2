// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>

class QWidget;

namespace headroom {

/// Scrolling the what-if panel must not change its settings: a wheel over a combo box, a spin
/// box or a slider that does not have the keyboard focus scrolls the panel instead (a click
/// or Tab gives the control focus; then the wheel changes it, as everywhere else).
class WheelGuard : public QObject {
    Q_OBJECT
public:
    /// Guards every combo box, spin box and slider under `root` (call it once they exist).
    static void install(QWidget* root);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    explicit WheelGuard(QObject* parent)
        : QObject(parent)
    {}
    void guard(QWidget* w);
};

} // namespace headroom
