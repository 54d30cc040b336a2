// SPDX-License-Identifier: MIT
#include "ui/explorer/logging.h"

#include <QElapsedTimer>

namespace headroom {

Q_LOGGING_CATEGORY(lcTiming, "headroom.timing", QtWarningMsg)

namespace {

QElapsedTimer startedTimer()
{
    QElapsedTimer t;
    t.start();
    return t;
}

const QElapsedTimer g_started = startedTimer();

} // namespace

double msSinceStart()
{
    return double(g_started.nsecsElapsed()) / 1e6;
}

} // namespace headroom
