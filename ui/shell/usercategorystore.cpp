// SPDX-License-Identifier: MIT
#include "ui/shell/usercategorystore.h"

#include <QCryptographicHash>
#include <QFileInfo>
#include <QSettings>

namespace headroom {

namespace {
const QString kDefaultKey = QStringLiteral("categories/rules");
} // namespace

QString UserCategoryStore::fileKey(const QString& path)
{
    // A hash: a path's slashes would read as QSettings groups.
    const QByteArray abs = QFileInfo(path).absoluteFilePath().toUtf8();
    return QStringLiteral("categories/byFile/") +
           QString::fromLatin1(QCryptographicHash::hash(abs, QCryptographicHash::Sha1).toHex());
}

QString UserCategoryStore::rulesFor(const QString& path)
{
    const QSettings settings;
    if (!path.isEmpty() && settings.contains(fileKey(path)))
        return settings.value(fileKey(path)).toString();
    return settings.value(kDefaultKey).toString();
}

bool UserCategoryStore::hasFileRules(const QString& path)
{
    return !path.isEmpty() && QSettings().contains(fileKey(path));
}

void UserCategoryStore::save(const QString& path, const QString& rules, bool forFileOnly)
{
    QSettings settings;
    if (forFileOnly && !path.isEmpty()) {
        settings.setValue(fileKey(path), rules);
        return;
    }
    settings.setValue(kDefaultKey, rules);
    if (!path.isEmpty())
        settings.remove(fileKey(path));
}

} // namespace headroom
