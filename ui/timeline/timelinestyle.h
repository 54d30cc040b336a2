// SPDX-License-Identifier: MIT
#pragma once

// Colours and proportions the timeline's layers share.

#include <QColor>

namespace headroom::timelinestyle {

inline constexpr double kPhaseBandRatio = 0.035; ///< of the axis rect's height
inline const QColor kAllocatedColor{31, 119, 180};
/// The filled total's opacity (no categories): QCPGraph's brush by allocation, mixed
/// with the background by CategoryAreaLayer by category.
inline constexpr int kAllocatedFillAlpha = 90;
inline const QColor kReservedColor{230, 126, 34};
/// The simulated reserved curve, dashed over the recorded one: a magenta that no category
/// or marker uses, mid-bright so it reads on the light and the dark background.
inline const QColor kSimulatedReservedColor{214, 39, 160};
/// The what-if's projected run over the measured one: a violet apart from the categories,
/// the reserved curves and the markers.
inline const QColor kProjectedColor{106, 61, 154};
inline const QColor kPeakColor{200, 30, 30};
inline const QColor kOomColor{190, 0, 0};
inline const QColor kSelectionColor{0, 150, 136};

} // namespace headroom::timelinestyle
