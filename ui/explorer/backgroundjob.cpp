// SPDX-License-Identifier: MIT
#include "ui/explorer/backgroundjob.h"

#include <QTimer>

#include <algorithm>

namespace headroom {

namespace {
constexpr int kProgressIntervalMs = 50;
}

void BackgroundJob::Control::setProgress(int permille)
{
    m_permille.store(std::clamp(permille, 0, 1000), std::memory_order_relaxed);
}

void BackgroundJob::Control::setProgress(uint64_t done, uint64_t total)
{
    if (total > 0)
        setProgress(static_cast<int>(std::min<uint64_t>(1000, done * 1000 / total)));
}

BackgroundJob::BackgroundJob(QObject* parent)
    : QObject(parent)
    , m_progressTimer(new QTimer(this))
{
    m_progressTimer->setInterval(kProgressIntervalMs);
    connect(m_progressTimer, &QTimer::timeout, this, &BackgroundJob::pollProgress);
}

BackgroundJob::~BackgroundJob()
{
    // The worker holds its own reference to the control: it sees the flag and stops, and
    // its watcher (a child) goes with this object, so nothing is delivered.
    if (m_control)
        m_control->cancel();
}

quint64 BackgroundJob::begin(const std::shared_ptr<Control>& control)
{
    if (m_control)
        m_control->cancel(); // latest wins: its result is dropped anyway
    m_control = control;
    m_lastPermille = 0;
    m_progressTimer->start();
    return ++m_generation;
}

bool BackgroundJob::end(quint64 generation)
{
    if (generation != m_generation)
        return false;
    m_finishNow = nullptr;
    m_control.reset();
    m_progressTimer->stop();
    return true;
}

void BackgroundJob::cancel()
{
    if (!m_control)
        return;
    m_control->cancel();
    m_control.reset();
    m_finishNow = nullptr;
    m_progressTimer->stop();
    ++m_generation; // whatever the worker still returns is stale now
}

bool BackgroundJob::finishNow()
{
    if (!m_control || !m_finishNow)
        return false;
    const std::function<void()> finish = std::move(m_finishNow); // end() clears the member
    finish();
    return true;
}

void BackgroundJob::pollProgress()
{
    if (!m_control)
        return;
    const int permille = m_control->progress();
    if (permille != m_lastPermille) {
        m_lastPermille = permille;
        emit progressChanged(permille);
    }
}

} // namespace headroom
