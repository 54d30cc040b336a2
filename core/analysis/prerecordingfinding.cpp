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

std::string factoredText(const PreRecording& r)
{
    return "optimizer state " + formatBytes(r.factoredBytes) + " of Adafactor's kind (" +
           std::to_string(r.factoredBlocks) + " blocks of factored second moments)";
}

std::string factoredEvidence(const PreRecording& r)
{
    return "the " + std::to_string(r.factoredBlocks) +
           " blocks a factored second moment keeps for the gradients' recorded shapes (a row and a column mean "
           "per matrix, the whole moment per vector, " + std::to_string(r.factoredElementBytes) +
           " bytes an element) are all there beyond the weights";
}

} // namespace

std::optional<Finding> preRecordingFinding(const PreRecording& r)
{
    const bool factored = r.factoredBlocks > 0;
    if ((!r.found() || r.readings.empty()) && !factored)
        return std::nullopt;
    Finding f;
    f.kind = "before_recording";
    f.evidence = r.evidence;
    if (factored)
        f.evidence += (f.evidence.empty() ? "" : "; ") + factoredEvidence(r);
    if (!r.found() || r.readings.empty()) {
        f.verdict = "recorded mid-run: the memory from before the recording holds the weights and " + factoredText(r);
        f.firstMove = "nothing to settle: the breakdown, the what-if and the ladder count it so";
        return f;
    }
    if (r.decided()) {
        f.verdict = "recorded mid-run: the memory from before the recording is " +
                    readingText(r.readings.front(), r.weightBytes) + (factored ? " + " + factoredText(r) : "");
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
