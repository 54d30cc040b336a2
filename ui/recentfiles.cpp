// SPDX-License-Identifier: MIT
#include "ui/recentfiles.h"

#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace headroom {

namespace {
const QString kSettingsKey = QStringLiteral("recentFiles");
}

RecentFiles::RecentFiles(QMenu* menu, QObject* parent)
    : QObject(parent)
    , m_menu(menu)
{
    m_files = QSettings().value(kSettingsKey).toStringList();
    while (m_files.size() > kMaxEntries)
        m_files.removeLast();
    rebuildMenu();
}

void RecentFiles::add(const QString& path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    m_files.removeAll(absolute);
    m_files.prepend(absolute);
    while (m_files.size() > kMaxEntries)
        m_files.removeLast();
    save();
}

void RecentFiles::remove(const QString& path)
{
    m_files.removeAll(QFileInfo(path).absoluteFilePath());
    save();
}

void RecentFiles::clear()
{
    m_files.clear();
    save();
}

void RecentFiles::save()
{
    QSettings().setValue(kSettingsKey, m_files);
    rebuildMenu();
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
