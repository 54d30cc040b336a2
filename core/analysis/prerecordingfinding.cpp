// SPDX-License-Identifier: MIT
#include "core/analysis/prerecordingfinding.h"

#include "core/util/units.h"

namespace headroom {

namespace {

std::string readingText(const PreRecordingReading& x, int64_t weights)
{
    std::string s = "weights " + formatBytes(weights);
    if (x.states > 0)
        s += " + optimizer state " + formatBytes(x.states * weights) + " (" + std::to_string(x.states) +
             (x.states == 1 ? " copy)" : " copies)");
    if (x.gradients > 0)
        s += " + gradients kept across steps " + formatBytes(x.gradients * weights);
    if (x.extraWeights > 0 && x.states == 0 && x.gradients == 0)
        return "weights " + formatBytes(weights * x.copies()) + " alone (a model whose sizes repeat; no state)";
    if (x.extraWeights > 0)
        s += " + " + formatBytes(x.extraWeights * weights) + " more weights (an EMA or a reference model)";
    return s;
}

} // namespace

std::optional<Finding> preRecordingFinding(const PreRecording& r)
{
    if (!r.found() || r.readings.empty())
        return std::nullopt;
    Finding f;
    f.kind = "before_recording";
    f.evidence = r.evidence;
    if (r.decided()) {
        f.verdict = "recorded mid-run: the memory from before the recording is " +
                    readingText(r.readings.front(), r.weightBytes);
        f.firstMove = "nothing to settle: the breakdown, the what-if and the ladder count it so";
        return f;
    }
    f.verdict = formatBytes(r.bytes) + " from before the recording holds one set of block sizes " +
                std::to_string(r.copies) + " times, and nothing in the trace says what the copies beyond the weights are: "
                "optimizer state " + formatBytes(r.stateBytesLow()) + " to " + formatBytes(r.stateBytesHigh()) +
                " over the readings: ";
    for (size_t i = 0; i < r.readings.size(); ++i)
        f.verdict += (i ? "; or " : "") + readingText(r.readings[i], r.weightBytes);
    f.firstMove = "left unknown until settled by " + r.settle;
    return f;
}

} // namespace headroom
