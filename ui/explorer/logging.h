// SPDX-License-Identifier: MIT
#pragma once

#include <QLoggingCategory>

namespace headroom {

/// How long the GUI's stages take (file shown, each view's data delivered). Off by default;
/// QT_LOGGING_RULES="headroom.timing.info=true" prints them.
Q_DECLARE_LOGGING_CATEGORY(lcTiming)

/// Milliseconds since the process started (near enough: since the GUI library was
/// loaded), so that stages logged by different threads line up.
double msSinceStart();

} // namespace headroom
