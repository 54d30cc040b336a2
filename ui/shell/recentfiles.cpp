// SPDX-License-Identifier: MIT
#include "ui/shell/recentfiles.h"

#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace headroom {

namespace {
const QString kSettingsKey = QStringLiteral("recentFiles");
/// path -> {"opened": ISO date, "peak": bytes}
const QString kInfoKey = QStringLiteral("recentFilesInfo");

QVariantMap infoMap()
{
    return QSettings().value(kInfoKey).toMap();
}
} // namespace

RecentFiles::RecentFiles(QMenu* menu, QObject* parent)
    : QObject(parent)
    , m_menu(menu)
{
    m_files = QSettings().value(kSettingsKey).toStringList();
    while (m_files.size() > kMaxEntries)
        m_files.removeLast();
    rebuildMenu();
}

void RecentFiles::add(const QString& path, qint64 peakBytes)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    m_files.removeAll(absolute);
    m_files.prepend(absolute);
    while (m_files.size() > kMaxEntries)
        m_files.removeLast();
    QVariantMap map = infoMap();
    QVariantMap entry = map.value(absolute).toMap();
    entry[QStringLiteral("opened")] = QDateTime::currentDateTime().toString(Qt::ISODate);
    if (peakBytes >= 0)
        entry[QStringLiteral("peak")] = peakBytes;
    map[absolute] = entry;
    save(std::move(map));
}

RecentFileInfo RecentFiles::info(const QString& path) const
{
    const QVariantMap entry = infoMap().value(QFileInfo(path).absoluteFilePath()).toMap();
    RecentFileInfo info;
    info.opened = QDateTime::fromString(entry.value(QStringLiteral("opened")).toString(), Qt::ISODate);
    bool ok = false;
    const qint64 peak = entry.value(QStringLiteral("peak")).toLongLong(&ok);
    if (ok && peak >= 0)
        info.peakBytes = peak;
    return info;
}

void RecentFiles::remove(const QString& path)
{
    m_files.removeAll(QFileInfo(path).absoluteFilePath());
    save(infoMap());
}

void RecentFiles::clear()
{
    m_files.clear();
    save(infoMap());
}

void RecentFiles::save(QVariantMap map)
{
    QSettings settings;
    settings.setValue(kSettingsKey, m_files);
    // Details only for the files still listed.
    for (auto it = map.begin(); it != map.end();)
        it = m_files.contains(it.key()) ? std::next(it) : map.erase(it);
    settings.setValue(kInfoKey, map);
    rebuildMenu();
    emit changed();
}

void RecentFiles::rebuildMenu()
{
    m_menu->clear();
    int number = 1;
    for (const QString& file : std::as_const(m_files)) {
        const QString text = QStringLiteral("&%1 %2").arg(number++).arg(QDir::toNativeSeparators(file));
        QAction* action = m_menu->addAction(text);
        // Queued: opening a file rebuilds this menu, which deletes the emitting action.
        connect(action, &QAction::triggered, this, [this, file] { emit fileRequested(file); }, Qt::QueuedConnection);
    }
    if (!m_files.isEmpty())
        m_menu->addSeparator();
    QAction* clearAction = m_menu->addAction(tr("Clear List"));
    clearAction->setEnabled(!m_files.isEmpty());
    connect(clearAction, &QAction::triggered, this, &RecentFiles::clear, Qt::QueuedConnection);
}

} // namespace headroom
