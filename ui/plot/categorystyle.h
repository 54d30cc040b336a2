// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/phase.h"
#include "core/model/tensorcategory.h"

#include <QColor>
#include <QString>

#include <array>

namespace headroom {

/// Stable colours and display names for tensor categories and phases, shared by every
/// view and export so a category looks the same everywhere. Colours are the Tableau 10
/// set (distinguishable, also for the common colour-vision deficiencies when paired with
/// the legend's order) and read on light and dark backgrounds alike.
QColor categoryColor(TensorCategory c);
QString categoryDisplayName(TensorCategory c);
QColor phaseColor(Phase p);
QString phaseDisplayName(Phase p);

/// Bottom to top in stacked charts: what lives longest at the bottom (core's one order,
/// the report's too).
const std::array<TensorCategory, kTensorCategoryCount>& categoryStackOrder();

/// "1.50 GiB" (or "1.61 GB" with decimal units, see core/util/units.h)
QString formatBytesQ(int64_t bytes, int decimals = 2);

} // namespace headroom
