// SPDX-License-Identifier: MIT
#pragma once

// The projection as a replay (docs/whatif-model.md, "Replay"): every allocation of the trace
// resized by its law at the target micro-batch and sequence, the whole history summed again,
// and the peak taken over every event, wherever it moves.

#include "core/whatif/replay/accumulationplan.h"
#include "core/whatif/laws/allocationlaw.h"
#include "core/whatif/vocabulary/allocationsizes.h"
#include "core/whatif/replay/autocastplan.h"
#include "core/whatif/replay/castplan.h"
#include "core/whatif/replay/checkpointplan.h"
#include "core/whatif/vocabulary/replaytarget.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace headroom {

/// The replayed peak under three readings: each allocation's central law, and the envelope
/// of the laws its evidence allows (lowest and highest at the target).
struct TraceReplayPeak {
    double central = 0, low = 0, high = 0;
    int64_t centralEvent = -1, lowEvent = -1, highEvent = -1; ///< first event at each peak; -1: before the trace
    /// With the cast after the build: the central peak of the model built at the target width
    /// (the pass the band's low edge comes from); -1 without a cast.
    double builtNarrow = -1;
};

/// What one ambiguity is worth at a target: the peak with that group read its lowest and its
/// highest way, the rest as they are (exact while the peak stays at the central reading's event).
struct AmbiguityWorth {
    size_t group = 0; ///< index into AllocationLaws::ambiguities()
    double low = 0, high = 0;
};

class TraceProjector {
public:
    /// `stoppedAt`: the event of the OOM that ended the recorded run (-1: it did not).
    TraceProjector(const MemoryTimeline& timeline, AllocationLaws laws, int b0, int s0, int64_t stoppedAt = -1);
    /// The same history under other laws (the laws of `from`, refined by more evidence).
    TraceProjector(const TraceProjector& from, AllocationLaws laws);

    /// The peak at the target (per device). `checkpointed`: with the checkpoint plan's moves,
    /// the peak taken over the plan's iteration (the steady state).
    TraceReplayPeak project(const ReplayTarget& t) const;
    TraceReplayPeak project(double b, double s, bool checkpointed = false) const
    {
        return project(ReplayTarget{b, s, checkpointed});
    }
    /// The ambiguities that move the peak at the target, largest first, at most `count`; `at`
    /// is project(t) when the caller has it.
    std::vector<AmbiguityWorth> worth(const ReplayTarget& t, size_t count, const TraceReplayPeak* at = nullptr) const;

    /// Every request and release of the projected run in the trace's order, the central reading
    /// at the target: `event` -1 for allocations alive before the trace; `bytes` as requested.
    /// With checkpointing, the plan's window only (what is alive at its start requested there),
    /// as the replay's peak counts it.
    void visit(const ReplayTarget& t, const std::function<void(int64_t event, uint32_t alloc, bool end, double bytes)>& f) const;

    /// The projected run's allocated bytes after each of the first `events` events of the
    /// measured trace, under the central, lowest and highest readings (a timeline to draw).
    /// Floats, 4 bytes an event rather than 8: drawn and shown, never summed, and 24 bits place
    /// a 16 GiB value within 1 KiB. The band's edges per block of kBandBlock events, the lowest
    /// low and the highest high in it: never narrower than the readings' band, at an eighth of
    /// the memory (docs/performance.md: 70 MB less on a 10M-event trace).
    struct Curve {
        static constexpr size_t kBandBlock = 8;
        std::vector<float> central;
        std::vector<float> low, high; ///< per block of kBandBlock events
        float lowAt(size_t event) const { return low[event / kBandBlock]; }
        float highAt(size_t event) const { return high[event / kBandBlock]; }
    };
    Curve curve(const ReplayTarget& t, size_t events) const;
    Curve curve(double b, double s, size_t events, bool checkpointed = false) const
    {
        return curve(ReplayTarget{b, s, checkpointed}, events);
    }

    /// Activation checkpointing of every repeated block, as moves of the history.
    void setCheckpointPlan(CheckpointPlan plan) { m_plan = std::move(plan); }
    const CheckpointPlan& checkpointPlan() const { return m_plan; }
    /// Gradient accumulation, as moves of the history.
    void setAccumulationPlan(AccumulationPlan plan) { m_accumulation = std::move(plan); }
    const AccumulationPlan& accumulationPlan() const { return m_accumulation; }
    /// A pure 16-bit target of a model built in the trace, as a cast after the build.
    void setCastPlan(CastPlan plan) { m_cast = std::move(plan); }
    const CastPlan& castPlan() const { return m_cast; }

    /// bf16 autocast of this fp32 history, from the recorder's op graph: a target with
    /// `autocast` set is projected over the history the plan makes.
    void setAutocastPlan(AutocastPlan plan);
    const AutocastPlan& autocastPlan() const { return m_autocastPlan; }
    bool hasAutocast() const { return m_autocast != nullptr; }
    /// Pure bf16 of this fp32 history by the op graph's dtype flow: a target with `dtypeFlow`.
    void setPureFlowPlan(AutocastPlan plan);
    const AutocastPlan& pureFlowPlan() const { return m_pureFlowPlan; }
    bool hasPureFlow() const { return m_pureFlow != nullptr; }
    /// The allocations a target's history holds: the trace's, and autocast's copies after them.
    size_t allocationCount(const ReplayTarget& t) const
    {
        ReplayTarget inner;
        return historyFor(t, inner).m_size.size();
    }

    const AllocationLaws& laws() const { return m_laws; }
    /// Each allocation's measured bytes.
    const AllocationSizes& sizes() const { return m_size; }
    int measuredMicroBatch() const { return m_b0; }
    int measuredSeq() const { return m_s0; }
    /// The measured peak (the replay at b0, s0): the timeline's own.
    double measuredPeak() const { return m_measuredPeak; }
    int64_t measuredPeakEvent() const { return m_measuredPeakEvent; }
    /// The recorded run's OOM, where its history (and so the replay) stops; -1: none.
    int64_t stoppedAt() const { return m_stoppedAt; }

private:
    /// 8 bytes, not 16: a 10M-event history holds about as many (docs/performance.md).
    struct Boundary {
        uint32_t event;
        uint32_t allocAndEnd; ///< allocation index << 1 | whether it is the release
        uint32_t alloc() const { return allocAndEnd >> 1; }
        bool end() const { return (allocAndEnd & 1u) != 0; }
    };
    /// The history of `from` under a dtype flow's plan (setAutocastPlan, setPureFlowPlan);
    /// `keepCast`: the cast after the build still applies (a pure precision).
    TraceProjector(const TraceProjector& from, const AutocastPlan& plan, bool keepCast);
    /// The projector a target's history is replayed on, and the target it is replayed at.
    const TraceProjector& historyFor(const ReplayTarget& t, ReplayTarget& inner) const;
    struct Factors;
    Factors factors(const ReplayTarget& t) const;
    /// One pass over the history.
    TraceReplayPeak replay(const Factors& f, const ReplayTarget& t) const;
    Curve curveOf(const Factors& f, const ReplayTarget& t, size_t events) const;
    /// The target with the transformations this history has no plan for left out.
    ReplayTarget effective(ReplayTarget t) const
    {
        t.checkpointed = t.checkpointed && !m_plan.empty();
        t.accumulated = t.accumulated && !m_accumulation.empty();
        t.castAfterBuild = t.castAfterBuild && !m_cast.empty() && t.floatWidth < 1;
        return t;
    }
    /// The moves the target's transformations add to the history, by event: one plan's own,
    /// or both merged into `merged`.
    const std::vector<CheckpointPlan::Move>& movesFor(const ReplayTarget& t, std::vector<CheckpointPlan::Move>& merged) const;
    /// The history's boundaries in order, with the target's moves and its cast:
    /// f(event, alloc, end, last of its event, at the measured width). The cast's boundaries
    /// come before the recorded ones of its event, each its own step (copy, then free).
    template <class F>
    void walk(const ReplayTarget& t, F&& f) const;
    /// Whether the peak may be taken at `event`.
    void visitWindow(const ReplayTarget& e, const std::function<double(uint32_t, bool)>& bytes,
                     const std::function<void(int64_t event, uint32_t alloc, bool end, double bytes)>& f) const;
    bool counts(int64_t event, bool checkpointed) const
    {
        return !checkpointed || (event >= m_plan.from && event <= m_plan.to);
    }

    AllocationLaws m_laws;
    AllocationSizes m_size;
    std::vector<uint32_t> m_initial; ///< alive before the first event
    std::vector<Boundary> m_boundaries; ///< by event
    int m_b0 = 1, m_s0 = 1;
    double m_measuredPeak = 0;
    int64_t m_measuredPeakEvent = -1;
    int64_t m_stoppedAt = -1;
    CheckpointPlan m_plan;
    AccumulationPlan m_accumulation;
    CastPlan m_cast;
    AutocastPlan m_autocastPlan, m_pureFlowPlan;
    std::shared_ptr<const TraceProjector> m_autocast, m_pureFlow;
};

} // namespace headroom
