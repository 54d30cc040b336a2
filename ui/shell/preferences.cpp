// SPDX-License-Identifier: MIT
#include "ui/shell/preferences.h"

#include <QSettings>

namespace headroom {

namespace {
const QString kUnitsKey = QStringLiteral("ui/units");
const QString kCapacityKey = QStringLiteral("analysis/defaultCapacity");
const QString kAutoReloadKey = QStringLiteral("files/autoReload");
} // namespace

Preferences Preferences::load()
{
    const QSettings settings;
    Preferences p;
    // Anything but the two known words (a corrupted file) keeps the default.
    p.units = settings.value(kUnitsKey).toString() == QLatin1String("decimal") ? ByteUnits::Decimal : ByteUnits::Binary;
    p.theme = savedTheme();
    bool ok = false;
    const qlonglong capacity = settings.value(kCapacityKey, 0).toLongLong(&ok);
    // At most 1 PiB: no device has more, and a bigger number is a broken settings file.
    p.defaultCapacity = ok && capacity > 0 && capacity <= (qlonglong(1) << 50) ? capacity : 0;
    p.autoReload = settings.value(kAutoReloadKey, false).toBool();
    return p;
}

void Preferences::save() const
{
    QSettings settings;
    settings.setValue(kUnitsKey, units == ByteUnits::Decimal ? QStringLiteral("decimal") : QStringLiteral("binary"));
    saveTheme(theme);
    settings.setValue(kCapacityKey, qlonglong(defaultCapacity));
    settings.setValue(kAutoReloadKey, autoReload);
}

void Preferences::apply() const
{
    setByteUnits(units);
    applyTheme(theme);
}

} // namespace headroom
