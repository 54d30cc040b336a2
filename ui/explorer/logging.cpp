// SPDX-License-Identifier: MIT
#include "ui/explorer/logging.h"

namespace headroom {

Q_LOGGING_CATEGORY(lcTiming, "headroom.timing", QtWarningMsg)

} // namespace headroom
