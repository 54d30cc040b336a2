// SPDX-License-Identifier: MIT
#pragma once

// How a trace's attention scores change under CUDA's autocast lists, read from the score-sized
// tensors alive at a calibration point (docs/whatif-model.md, "Precision"). CUDA runs softmax
// (and exp) in fp32 and the matmuls in bf16, so what a step saves per score depends on how
// many fp32 tensors each attention call saves and whether a dropout mask is among them; what a
// no_grad forward holds at its softmax depends on how many score-sized tensors are alive there.

#include "core/whatif/calibration/traceconfig.h"
#include "core/whatif/vocabulary/whatifstate.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// One allocation alive at the point read: a saved activation, or a temporary.
struct ScoreTensor {
    int64_t bytes = 0;
    int64_t start = 0;  ///< the event that made it
    bool score = false; ///< read as b*s^2 (its law)
};

/// The factor a CUDA autocast run applies to the fp32 run's scores, with the readings the
/// evidence leaves open. factor 0: nothing was read (no scores alive).
struct ScoresReading {
    double factor = 0, low = 0, high = 0;
    int calls = 0;   ///< attention calls found
    int perCall = 0; ///< score-sized fp32 tensors per call
    bool dropout = false;
    std::string evidence; ///< what decided it, for the calibration's "measured at" list
};

/// Saved for backward at the start of backward of an fp32 run: per call, n score-sized fp32
/// tensors and perhaps a bool dropout mask; the factor is attentionScoreBytes under autocast
/// over its fp32 bytes (whatifmodel.h: (4(n-1) + 2 + m [+ 4]) / (4n + m)). The calls are the runs of
/// score-sized tensors in the order they were made, between the layers' own activations
/// (anything larger than four b*h*s rows, `seq` the measured sequence).
ScoresReading readSavedScores(std::vector<ScoreTensor> alive, int seq);

/// Alive at a no_grad forward's peak: n score-sized fp32 tensors, one attention call's. The
/// autocast run peaks at the call's softmax instead, holding the bf16 input of the n, the fp32
/// copy softmax makes of it and its fp32 output: (2(n-1) + 8) / 4n. The band reaches down to
/// every one of them narrowed (x0.5: no fp32 op among them).
ScoresReading readForwardScores(const std::vector<ScoreTensor>& alive);

/// Both readings as the terms take them, from the b*s^2 tensors saved and held as temporaries
/// at the point read (`batchTemps`: every batch-sized temporary's bytes there), and the line
/// the calibration's "measured at" list shows (an empty key where there is nothing to say).
struct ScoresAutocastRead {
    ScoresAutocast factors;
    MeasuredItem item;
};
ScoresAutocastRead readScoresAutocast(const std::vector<ScoreTensor>& saved, const std::vector<ScoreTensor>& temps,
                                      double batchTemps, int seq);

} // namespace headroom
