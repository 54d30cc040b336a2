// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/categoryclassifier.h"
#include "core/analysis/phaseclassifier.h"
#include "core/model/frametable.h"
#include "core/model/snapshotmodel.h"
#include "core/replay/replay.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// One reading of the memory alive before the trace began: per parameter, how many copies are
/// optimizer state, kept gradients, or further weights (an EMA, a reference model).
struct PreRecordingReading {
    int states = 0;
    int gradients = 0;
    int extraWeights = 0;
    int copies() const { return 1 + states + gradients + extraWeights; }
    bool operator==(const PreRecordingReading&) const = default;
};

/// What the memory alive before the trace and at its end was, read from the copies of the
/// parameter set it holds (docs/categories-and-phases.md, "Memory from before the recording").
/// Recording switched on after the optimizer's first step leaves the weights and the state
/// with no allocation event; one size of block, alive before and through, is then the
/// parameter set k times.
struct PreRecording {
    int64_t bytes = 0;       ///< alive before the trace and at its end
    int64_t weightBytes = 0; ///< one copy of the parameter set among them
    int copies = 0;          ///< copies of the parameter set (0: none found)
    /// Where the parameter set came from: "gradients born in the trace" or "block counts".
    std::string reference;
    std::string optimizer; ///< named by the optimizer step's frames ("adamw"), else empty
    bool stepCounters = false; ///< the named optimizer keeps a step counter per parameter (Adam's kind)
    std::vector<PreRecordingReading> readings; ///< every reading the evidence allows
    std::string evidence;                      ///< why, in words
    std::string settle;                        ///< what would settle it (undecided only)
    /// State of Adafactor's kind (factored second moments) read from the gradients' shapes:
    /// its bytes and blocks, and the bytes per element of the prediction that fit (0: none read).
    int64_t factoredBytes = 0;
    int64_t factoredBlocks = 0;
    int factoredElementBytes = 0;

    bool found() const { return copies >= 2; }
    bool decided() const { return readings.size() == 1; }
    /// Bytes each reading gives the optimizer state (and the gradients): the band.
    int64_t stateBytesLow() const;
    int64_t stateBytesHigh() const;
};

/// Reads the memory from before the recording and relabels `classes` by the reading when the
/// evidence allows only one; when it allows several, the copies beyond the weights are left
/// Unknown (CategoryRule::BeforeWindowUndecided) and the readings say what they may be.
/// Also relabels memory from before the trace that the optimizer's update (not zero_grad) frees:
/// state the step replaced.
/// `tensors`: what the recorder said of each allocation (its shapes predict factored state).
using RecordedTensors = std::vector<std::pair<uint32_t, RecordedTensor>>;
PreRecording readPreRecording(const FrameTable& frames, const MemoryTimeline& timeline, const PhaseAnalysis& phases,
                              std::vector<AllocationClass>& classes, const RecordedTensors& tensors = {});

} // namespace headroom
