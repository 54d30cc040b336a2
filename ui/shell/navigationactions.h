// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>

class QMenu;

namespace headroom {

class Explorer;

/// The Go menu: step through events (Alt+Left/Right), jump to the peak or to an event
/// number, zoom in, out and to the selected range, and switch between the views
/// (Alt+1 to Alt+0). Everything acts on the explorer's shared selection and timeline.
class NavigationActions : public QObject {
    Q_OBJECT
public:
    NavigationActions(Explorer* explorer, QMenu* menu, QObject* parent = nullptr);

    void stepEvent(int delta);
    void goToPeak();
    void goToEvent(int64_t event);
    void zoomToSelection();

private:
    Explorer* m_explorer;
};

} // namespace headroom
