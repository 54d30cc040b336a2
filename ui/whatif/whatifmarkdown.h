// SPDX-License-Identifier: MIT
#pragma once

#include "core/whatif/calibration/whatifcalibration.h"
#include "core/whatif/ladder/whatifladder.h"

#include <QString>
#include <QStringList>

namespace headroom {

/// The postmortem's what-if section: the configuration, the projection against the
/// capacity, the step time, how the measured run is known and the ladder up to its first
/// fitting rung. `calibration` is null in analytic mode.
QString whatIfMarkdown(const Projection& projection, const Ladder& ladder, const Calibration* calibration,
                       const DeviceSpec& device);

/// For a projection replayed over every allocation (a micro-batch or sequence move): the
/// allocated peak and its band, then each open ambiguity with what it is worth and what would
/// settle it, one sentence each. Empty otherwise.
QStringList replayLines(const Projection& projection);

/// The panel's summary of a projection (rich text): the peak and its band against the device,
/// the verdict, the step time and what it is made of.
QString projectionSummaryHtml(const Projection& projection, const DeviceSpec& device, const WhatIfConstants& k);

/// What a ladder rung costs, in words: "engineering: low; throughput: +33% step time".
QString rungCosts(const Rung& rung);

/// "sets expandable_segments=on; with rung 1's settings": what applying rung `i` changes.
QString rungSettings(const Ladder& ladder, size_t i);

} // namespace headroom
