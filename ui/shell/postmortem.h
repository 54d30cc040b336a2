// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

namespace headroom {

class Explorer;

/// File ▸ Export postmortem: a Markdown report (report.md) with images of the timeline,
/// the breakdown at the peak, the stacks at the peak, the diagnosis and the what-if panel
/// (its configuration, projection and ladder), plus the file's
/// summary numbers, written into `directory` (created when missing). Needs the analysis
/// (Explorer::data()); the selection is put back afterwards.
bool writePostmortem(Explorer& explorer, const QString& directory, QString* error);

} // namespace headroom
