// SPDX-License-Identifier: MIT
#pragma once

#include "core/util/units.h"
#include "ui/shell/theme.h"

#include <cstdint>

namespace headroom {

/// The user's choices from Settings ▸ Preferences, kept in QSettings so that they
/// survive a restart: how sizes are written, the colour theme, the capacity to assume
/// when a file does not tell it, and whether a file that changes on disk reloads by itself.
struct Preferences {
    ByteUnits units = ByteUnits::Binary;
    Theme theme = Theme::System;
    int64_t defaultCapacity = 0; ///< bytes; 0: none (only what the file says)
    bool autoReload = false;

    static Preferences load();
    void save() const;
    /// Makes the process use them: units for every size, the theme's palette.
    void apply() const;

    bool operator==(const Preferences&) const = default;
};

} // namespace headroom
