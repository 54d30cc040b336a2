// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

namespace headroom {

/// The application's colours: the platform's, or Fusion with a light or dark palette.
/// The choice is kept in QSettings ("ui/theme").
enum class Theme { System, Light, Dark };

void applyTheme(Theme theme);
Theme savedTheme();
void saveTheme(Theme theme);

} // namespace headroom
