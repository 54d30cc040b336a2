// SPDX-License-Identifier: MIT
#include "app/clistate.h"

#include "app/clijson.h"

#include "core/analysis/memoryanalysis.h"
#include "core/io/loader.h"
#include "core/util/loaderror.h"
#include "core/util/units.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

namespace headroom::cli {

namespace {

const char* stateName(BlockState s)
{
    switch (s) {
    case BlockState::ActiveAllocated: return "allocated";
    case BlockState::ActivePendingFree: return "pending_free";
    case BlockState::Inactive: return "inactive";
    case BlockState::Unknown: break;
    }
    return "unknown";
}

nlohmann::json stateJson(const AllocatorState& st, int device)
{
    nlohmann::json segs = nlohmann::json::array();
    for (const StateSegment& s : st.segments) {
        nlohmann::json blocks = nlohmann::json::array();
        for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b) {
            const StateBlock& blk = st.blocks[b];
            blocks.push_back({{"address", blk.address}, {"size", blk.size}, {"requested_size", blk.requested},
                              {"state", stateName(blk.state)}});
        }
        segs.push_back({{"address", s.address}, {"total_size", s.size}, {"stream", s.stream},
                        {"large_pool", s.largePool}, {"before_window", s.beforeWindow},
                        {"pool_id", {s.poolId.first, s.poolId.second}},
                        {"allocated_size", s.allocated}, {"blocks", std::move(blocks)}});
    }
    nlohmann::json pools = nlohmann::json::array();
    for (const AllocatorState::PoolShare& p : st.privatePools())
        pools.push_back({{"pool_id", {p.poolId.first, p.poolId.second}},
                         {"segments", p.segments},
                         {"reserved", p.reserved},
                         {"allocated", p.allocated}});
    return {{"device", device},
            {"event_index", st.event},
            {"reserved", st.reserved},
            {"allocated", st.allocated},
            {"allocated_blocks", st.allocatedBlocks},
            {"pending_free", st.pendingFree},
            {"inactive", st.inactive},
            {"inactive_blocks", st.inactiveBlocks},
            {"largest_free_block", st.largestFree},
            {"internal_fragmentation", st.internal},
            {"external_fragmentation", st.externalFragmentation()},
            {"unplaced_allocations", st.unplacedCount},
            {"private_pools", std::move(pools)},
            {"segments", std::move(segs)}};
}

void printState(const AllocatorState& st, int device, int maxBlocks)
{
    std::cout << "device " << device << ", state after event " << st.event << ": " << st.segments.size()
              << " segments, reserved " << formatBytes(st.reserved) << ", allocated " << formatBytes(st.allocated)
              << "\n  allocated blocks " << formatBytes(st.allocatedBlocks) << ", pending free "
              << formatBytes(st.pendingFree) << ", cached free " << formatBytes(st.inactive) << " in "
              << st.inactiveBlocks << " blocks (largest " << formatBytes(st.largestFree) << ")\n  rounding waste "
              << formatBytes(st.internal) << ", free outside the largest block " << formatBytes(st.externalFragmentation())
              << "\n";
    if (st.unplacedCount > 0)
        std::cout << "  " << st.unplacedCount << " live allocations (" << formatBytes(st.unplacedBytes)
                  << ") lie in no known segment: events were lost\n";
    for (const AllocatorState::PoolShare& p : st.privatePools())
        std::cout << "  private pool (" << p.poolId.first << ", " << p.poolId.second << "): " << p.segments
                  << (p.segments == 1 ? " segment, reserved " : " segments, reserved ") << formatBytes(p.reserved)
                  << ", allocated " << formatBytes(p.allocated) << "\n";
    std::vector<const StateSegment*> order;
    for (const StateSegment& s : st.segments)
        order.push_back(&s);
    std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->size > b->size; });
    int shown = 0;
    for (const StateSegment* s : order) {
        if (shown >= maxBlocks)
            break;
        std::cout << "  segment 0x" << std::hex << s->address << std::dec << " " << formatBytes(s->size) << " ("
                  << (s->largePool ? "large" : "small") << " pool"
                  << (s->privatePool() ? ", private pool (" + std::to_string(s->poolId.first) + ", " +
                                             std::to_string(s->poolId.second) + ")"
                                       : std::string())
                  << ", stream " << s->stream << "): "
                  << formatBytes(s->allocated) << " in use, " << s->blockCount << " blocks\n";
        ++shown;
    }
    if (int(order.size()) > shown)
        std::cout << "  ... " << order.size() - size_t(shown) << " smaller segments (--segments N shows more)\n";
}

} // namespace

void StateCommand::add(CLI::App& app)
{
    m_cmd = app.add_subcommand("state", "The allocator's segments and blocks after an event");
    m_cmd->add_option("FILE", m_file, "Snapshot or trace file")->required();
    m_cmd->add_option("--event", m_event, "Event index (-1: before the first; default: the peak)");
    m_cmd->add_option("--device", m_device, "Device ordinal (default: the first with events)");
    m_cmd->add_flag("--json", m_json, "Machine-readable JSON output (every block)");
    m_cmd->add_option("--segments", m_blocks, "Segments to list in the text output (largest first)");
    m_cmd->add_option("--query-bench", m_benchQueries,
                      "Time this many random queries (live set, breakdown, allocator state) and print the figures");
}

int StateCommand::run()
{
    try {
        auto trace = Loader::load(m_file);
        const auto& devs = trace->snapshot.devices;
        size_t d = 0;
        for (size_t i = 0; i < devs.size(); ++i) {
            if (m_device >= 0 ? devs[i].device == m_device : devs[i].trace.count() > 0) {
                d = i;
                break;
            }
            if (m_device >= 0 && i + 1 == devs.size()) {
                std::cerr << "headroom-cli: " << m_file << ": no device " << m_device << "\n";
                return 2;
            }
        }
        if (devs.empty()) {
            std::cerr << "headroom-cli: " << m_file << ": no devices\n";
            return 2;
        }
        const MemoryTimeline& tl = trace->timelines[d];
        const auto start = std::chrono::steady_clock::now();
        const DeviceAnalysis a = analyzeDevice(*trace, d);
        const double analyzeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const auto n = int64_t(devs[d].trace.count());
        if (m_benchQueries > 0) {
            std::mt19937_64 rng(1);
            std::vector<double> live, breakdown, state, scan;
            auto timeUs = [](auto&& fn) {
                const auto t0 = std::chrono::steady_clock::now();
                fn();
                return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
            };
            size_t sink = 0;
            for (int q = 0; q < m_benchQueries; ++q) {
                const int64_t e = n > 0 ? int64_t(rng() % uint64_t(n)) : -1;
                live.push_back(timeUs([&] { sink += a.liveAt(tl, e).size(); }));
                breakdown.push_back(timeUs([&] { sink += size_t(a.breakdownAt(tl, e).count); }));
                state.push_back(timeUs([&] { sink += a.allocator.stateAt(tl, e).blocks.size(); }));
                // The baseline: one pass over every allocation (what a query cost before the index).
                scan.push_back(timeUs([&] {
                    for (const Allocation& al : tl.allocations)
                        sink += size_t(al.aliveAfter(e));
                }));
            }
            std::sort(scan.begin(), scan.end());
            const double baseline = std::max(1e-3, scan[scan.size() / 2]);
            auto report = [&](const char* what, std::vector<double>& v) {
                std::sort(v.begin(), v.end());
                std::cout << "query " << what << ": median " << v[v.size() / 2] << " us, max " << v.back()
                          << " us, " << v[v.size() / 2] / baseline << " of one pass over every allocation\n";
            };
            std::cout << "events " << n << ", allocations " << tl.allocations.size() << ", analysis " << analyzeMs
                      << " ms, live-set checkpoints " << a.allocator.liveIndex().checkpointCount() << " ("
                      << a.allocator.liveIndex().storedIndices() << " indices)\n";
            report("live set", live);
            report("breakdown", breakdown);
            report("allocator state", state);
            std::cout << "baseline pass over every allocation: median " << baseline << " us\n";
            return sink == size_t(-1) ? 1 : 0;
        }
        const int64_t event = m_event.value_or(tl.peakEventIndex);
        if (event < -1 || event >= std::max<int64_t>(n, 1)) {
            std::cerr << "headroom-cli: --event " << event << " is outside the trace (-1 to " << n - 1 << ")\n";
            return 2;
        }
        const AllocatorState st = a.allocator.stateAt(tl, event);
        if (m_json)
            printJson(stateJson(st, devs[d].device));
        else
            printState(st, devs[d].device, m_blocks);
        return 0;
    } catch (const LoadError& e) {
        std::cerr << "headroom-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "headroom-cli: " << m_file << ": out of memory\n";
        return 2;
    }
}

} // namespace headroom::cli
