// SPDX-License-Identifier: MIT
#pragma once

// The postmortem's text, one source for the GUI's File ▸ Export postmortem (report.md,
// which adds the images, the notes and the what-if panel) and `headroom-cli analyze
// --markdown`: the summary table, what is alive at the peak by category and by the code
// that allocated it, and the diagnosis.

#include "core/analysis/diagnosis.h"
#include "core/analysis/livegroups.h"
#include "core/analysis/memoryanalysis.h"
#include "core/replay/loadedtrace.h"

#include <string>
#include <vector>

namespace headroom {

/// What the postmortem is written from: one device's analysis and diagnosis.
struct PostmortemParts {
    const LoadedTrace& trace;
    size_t deviceIndex = 0;
    const DeviceAnalysis& analysis;
    const CapacityEstimate& capacity;
    const std::vector<Finding>& findings;
};

struct PostmortemOptions {
    std::string writtenBy; ///< "Written by ..." line under the title; empty: none
    bool images = false;   ///< link timeline.png, breakdown_at_peak.png, ... (the GUI writes them)
    size_t topGroups = 10; ///< rows of the table of code alive at the peak
    int headingLevel = 1;  ///< of the title; sections are one deeper
    std::string title;     ///< the title's text; empty: "Memory postmortem: FILE"
};

std::string postmortemMarkdown(const PostmortemParts& parts, const PostmortemOptions& options = {});

/// The diagnosis section's body: the peak, each finding with its evidence and first move,
/// each OOM with its failing request's frames; `findingLevel`: the findings' heading level.
std::string diagnosisMarkdown(const PostmortemParts& parts, int findingLevel = 3);

/// "Capacity", "Leak", ...: a finding's kind as a heading.
std::string findingTitle(const std::string& kind);

/// "parameters", "optimizer state", ...: a category as prose names it.
std::string categoryProseName(TensorCategory c);

/// "96 x 100.00 MiB".
std::string groupCountText(const LiveGroup& g);

} // namespace headroom
