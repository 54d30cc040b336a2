// SPDX-License-Identifier: MIT
#pragma once

#include "ui/timeline/timelineview.h"

class QCheckBox;
class QComboBox;
class QSpinBox;
class QVBoxLayout;

namespace headroom {

class BackgroundJob;
struct TimelineState;

/// The row above the timeline's chart: "Show:" by category or by allocation, the
/// by-allocation mode's band detail (enabled in that mode only), and "Simulated reserved";
/// Ctrl+Shift+M toggles the mode. The widgets are the view's children and call its
/// setMode, setBandDetail and simulated-reserved methods; the view shows its state back in
/// them with showMode, showBandDetail and showSimulatedReserved.
///
/// Checking "Simulated reserved" replays the device's allocator under the setting the
/// snapshot recorded, off the GUI thread, and hands the view the simulated reserved curve;
/// unchecking clears it. It is disabled, with a tooltip that says why, where there is no
/// allocator trace to replay.
class TimelineControls {
public:
    /// Inserts the row at the top of `layout` (the view's).
    TimelineControls(TimelineView* view, QVBoxLayout* layout);
    ~TimelineControls();

    /// Without echoing the change back to the view.
    void showMode(TimelineView::Mode mode);
    void showBandDetail(int maxBands);
    /// Whether a simulated reserved curve is drawn; a replay still running is dropped
    /// (whoever set or cleared the curve has the last word).
    void showSimulatedReserved(bool shown);
    /// A new device or trace: no simulated curve, and the toggle enabled only where
    /// the device has an allocator trace.
    void deviceChanged(const TimelineState& state);
    /// The legend label of the recorded-setting replay.
    static QString recordedSettingLabel();

private:
    QComboBox* m_modeCombo;
    QSpinBox* m_detailSpin;
    QCheckBox* m_simulatedCheck;
    BackgroundJob* m_replay; ///< the view's child
};

} // namespace headroom
