// SPDX-License-Identifier: MIT
#pragma once

#include "ui/timelineview.h"

class QComboBox;
class QSpinBox;
class QVBoxLayout;

namespace headroom {

/// The row above the timeline's chart: "Show:" by category or by allocation, and the
/// by-allocation mode's band detail (enabled in that mode only); Ctrl+Shift+M toggles the
/// mode. The widgets are the view's children and call its setMode and setBandDetail; the
/// view shows its state back in them with showMode and showBandDetail.
class TimelineControls {
public:
    /// Inserts the row at the top of `layout` (the view's).
    TimelineControls(TimelineView* view, QVBoxLayout* layout);

    /// Without echoing the change back to the view.
    void showMode(TimelineView::Mode mode);
    void showBandDetail(int maxBands);

private:
    QComboBox* m_modeCombo;
    QSpinBox* m_detailSpin;
};

} // namespace headroom
