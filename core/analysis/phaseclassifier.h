// SPDX-License-Identifier: MIT
#pragma once

#include "core/analysis/phase.h"
#include "core/model/snapshotmodel.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// How an event's phase was decided, best source first.
enum class PhaseSource : uint8_t { Annotation, Frames, Neighbours, Default, AfterOom };

struct PhaseSpan {
    Phase phase = Phase::Other;
    int64_t startEvent = 0; ///< inclusive
    int64_t endEvent = 0;   ///< inclusive
};

struct Iteration {
    int index = 0;
    int64_t startEvent = 0; ///< inclusive
    int64_t endEvent = 0;   ///< inclusive
};

struct PhaseAnalysis {
    std::vector<Phase> eventPhase;        ///< one per trace event
    std::vector<PhaseSource> eventSource; ///< why
    std::vector<PhaseSpan> spans;         ///< maximal runs of one phase
    std::vector<Iteration> iterations;    ///< at least one when the trace has events
    std::string iterationSource;          ///< "annotations", "optimizer steps", "forward starts", "single window"
    int64_t firstForwardEvent = -1;

    /// The iteration an event belongs to (binary search); -1 when there are no events.
    int iterationOf(int64_t event) const;
    /// The span containing an event.
    const PhaseSpan* spanOf(int64_t event) const;
};

/// Frames of the Python runtime that starts a worker process or thread
/// (`multiprocessing/pool.py`, `popen_fork.py`, `threading.py`, `concurrent/futures/`): their
/// `__init__` is a pool's or a thread's, not a model's, and says nothing about the phase.
bool isWorkerStartFile(std::string_view file);

/// Labels every event of one device with a training phase (docs/categories-and-phases.md): first
/// `external_annotations` windows (`Optimizer.step#…`, `## forward ##`, …), then the
/// stack frames (autograd engine, torch/optim, module forward chains, loss code), then,
/// for events without frames (backward with `stacks='python'`), the phases around them.
/// Also numbers the iterations.
class PhaseClassifier {
public:
    static PhaseAnalysis classify(const Snapshot& snapshot, const DeviceData& device);

    /// The phase a single stack indicates, or Other if no rule matches (exposed for tests).
    static Phase phaseOfStack(const FrameTable& frames, uint32_t stack, bool* matched);
};

} // namespace headroom
