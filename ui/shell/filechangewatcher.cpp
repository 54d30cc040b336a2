// SPDX-License-Identifier: MIT
#include "ui/shell/filechangewatcher.h"

#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTimer>

namespace headroom {

FileChangeWatcher::FileChangeWatcher(QObject* parent)
    : QObject(parent)
    , m_watcher(new QFileSystemWatcher(this))
    , m_settle(new QTimer(this))
{
    m_settle->setSingleShot(true);
    m_settle->setInterval(600);
    connect(m_watcher, &QFileSystemWatcher::fileChanged, this, &FileChangeWatcher::onSomethingChanged);
    connect(m_watcher, &QFileSystemWatcher::directoryChanged, this, &FileChangeWatcher::onSomethingChanged);
    connect(m_settle, &QTimer::timeout, this, &FileChangeWatcher::settle);
}

void FileChangeWatcher::setSettleMs(int ms)
{
    m_settle->setInterval(ms);
}

FileChangeWatcher::Stamp FileChangeWatcher::stampOf(const QString& path)
{
    const QFileInfo fi(path);
    Stamp s;
    s.exists = fi.exists();
    if (s.exists) {
        s.size = fi.size();
        s.modified = fi.lastModified();
    }
    return s;
}

void FileChangeWatcher::watch(const QString& path)
{
    m_settle->stop();
    m_path = path.isEmpty() ? QString() : QFileInfo(path).absoluteFilePath();
    m_loaded = m_path.isEmpty() ? Stamp{} : stampOf(m_path);
    m_lastProbe = m_loaded;
    rewatch();
}

void FileChangeWatcher::rewatch()
{
    const QStringList old = m_watcher->files() + m_watcher->directories();
    if (!old.isEmpty())
        m_watcher->removePaths(old);
    if (m_path.isEmpty())
        return;
    // The directory too: a rename over the file or delete-and-recreate ends the file's watch.
    m_watcher->addPath(QFileInfo(m_path).absolutePath());
    if (QFileInfo::exists(m_path))
        m_watcher->addPath(m_path);
}

void FileChangeWatcher::onSomethingChanged()
{
    if (m_path.isEmpty())
        return;
    if (!m_watcher->files().contains(m_path) && QFileInfo::exists(m_path))
        m_watcher->addPath(m_path);
    m_lastProbe = stampOf(m_path);
    m_settle->start(); // restarts: wait until the writer has been quiet for a moment
}

void FileChangeWatcher::settle()
{
    const Stamp now = stampOf(m_path);
    if (!(now == m_lastProbe)) { // still being written
        m_lastProbe = now;
        m_settle->start();
        return;
    }
    if (!now.exists || now == m_loaded)
        return; // deleted (wait for it to come back) or touched without a change
    m_loaded = now; // once per change, even when the user does not reload
    emit changed(m_path);
}

} // namespace headroom
