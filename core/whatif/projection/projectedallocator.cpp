// SPDX-License-Identifier: MIT
#include "core/whatif/projection/projectedallocator.h"

#include "core/replay/allocatorsim.h"

#include <algorithm>
#include <vector>

namespace headroom {

namespace {

/// Device memory of a capacity: a segment fits or the request is out of memory. Addresses are
/// invented, one after the other.
class CapacityMemory final : public DeviceMemory {
public:
    explicit CapacityMemory(int64_t capacity) : m_capacity(capacity) {}
    bool malloc(int64_t size, int64_t reserved, int64_t, uint64_t& addr) override
    {
        if (!fits(size, reserved))
            return false;
        addr = next(size);
        return true;
    }
    bool map(int64_t size, int64_t reserved) override { return fits(size, reserved); }
    uint64_t reserveAddressSpace(int64_t size) override { return next(size); }
    int64_t allowedMaximum() const override { return m_capacity; }

private:
    bool fits(int64_t size, int64_t reserved) const { return m_capacity <= 0 || reserved + size <= m_capacity; }
    uint64_t next(int64_t size)
    {
        const uint64_t a = m_next;
        m_next += (uint64_t(size) + (2u << 20) - 1) / (2u << 20) * (2u << 20) + (2u << 20);
        return a;
    }
    int64_t m_capacity = 0;
    uint64_t m_next = 1ull << 40;
};

} // namespace

ProjectedAllocatorRun simulateProjected(const TraceProjector& tp, const ReplayTarget& target,
                                        const AllocatorConfig& config, int64_t capacity)
{
    ProjectedAllocatorRun run;
    CapacityMemory memory(capacity);
    AllocatorSim sim(config, memory);
    std::vector<int32_t> block(tp.allocationCount(target), AllocatorSim::kNone);
    // A gathered layer the measured run did not have (ZeRO-3, parameter offload): one request
    // before the history, held throughout.
    if (target.standing >= 0.5 && sim.malloc(int64_t(target.standing + 0.5), 0) == AllocatorSim::kNone)
        run.oom = ProjectedAllocatorRun::Oom{-1, sim.roundSize(int64_t(target.standing + 0.5)), sim.reserved()};
    tp.visit(target, [&](int64_t event, uint32_t alloc, bool end, double bytes) {
        if (run.oom)
            return; // the run stopped at its first out-of-memory request
        if (end) {
            if (block[alloc] != AllocatorSim::kNone)
                sim.free(block[alloc]);
            block[alloc] = AllocatorSim::kNone;
            return;
        }
        if (bytes < 0.5)
            return; // the target makes no such allocation (an optimizer without this state)
        ++run.requests;
        const int64_t requested = std::max<int64_t>(1, int64_t(bytes + 0.5));
        block[alloc] = sim.malloc(requested, 0);
        if (block[alloc] == AllocatorSim::kNone) {
            run.oom = ProjectedAllocatorRun::Oom{event, sim.roundSize(requested), sim.reserved()};
            return;
        }
        if (sim.reserved() > run.reservedPeak) {
            run.reservedPeak = sim.reserved();
            run.reservedPeakEvent = event;
        }
    });
    return run;
}

void simulateReserved(Projection& p, const WhatIfBaseline& base, const AllocatorConfig& recorded)
{
    if (!p.replayed || !base.trace)
        return;
    AllocatorConfig config = recorded;
    config.expandableSegments = p.config.expandableSegments;
    // Against the capacity less the central estimate of the memory outside the allocator and
    // of the target's cuBLAS workspaces a recording made off it lacks (held from the first
    // matmul of each thread: both counted): an OOM there is a verdict, not a margin (the
    // band's high context is the terms' margin).
    const double workspaces = base.workspaceEach * base.workspaceThreads(kStepPhaseCount - 1);
    const int64_t capacity = p.capacity > 0 ? int64_t(p.capacity - base.context - workspaces) : 0;
    const ProjectedAllocatorRun run = simulateProjected(*base.trace, p.replayTarget, config, capacity);
    SimulatedReserved r;
    r.peak = run.reservedPeak;
    r.peakEvent = run.reservedPeakEvent;
    r.capacity = capacity;
    r.expandableSegments = config.expandableSegments;
    if (run.oom) {
        r.oomEvent = run.oom->event;
        r.oomSize = run.oom->size;
        r.oomReserved = run.oom->reserved;
    }
    p.simulated = r;
    judgeBySimulation(p);
}

void judgeBySimulation(Projection& p)
{
    if (!p.simulated || p.capacity <= 0)
        return;
    // The simulation serves every request the projected run makes, releasing cached blocks
    // and retrying as PyTorch does: an OOM there does not fit; a run it serves fits at least
    // tightly, whatever the fragmentation ratio said.
    const Verdict byRatio = p.verdict;
    // The allocator never holds less than is allocated: a projected allocated peak above what
    // it may take does not fit, whatever one reading's simulation served (the headline's band
    // may hold readings the simulated central one does not).
    const bool overAllocated = p.peakAllocated > double(p.simulated->capacity) || p.peak > p.capacity;
    if (p.simulated->refused() || overAllocated) {
        p.verdict = Verdict::DoesNotFit;
        p.marginLeft = kFitsNoMargin;
    }
    else if (p.verdict == Verdict::DoesNotFit)
        p.verdict = Verdict::Tight;
    if (p.verdict != byRatio)
        p.verdictByRatio = byRatio;
    p.fits = p.verdict == Verdict::Fits;
}

} // namespace headroom
