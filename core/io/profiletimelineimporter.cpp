// SPDX-License-Identifier: MIT
#include "core/io/profiletimelineimporter.h"

#include "core/io/fakeaddresses.h"
#include "core/io/jsoninteger.h"
#include "core/util/loaderror.h"

#include <algorithm>
#include <array>
#include <limits>

namespace headroom {

namespace {

using json = nlohmann::json;

/// `base[i]`, built without operator+ chains (GCC 12 warns falsely on those, bug 105329).
std::string at(const std::string& base, size_t i)
{
    std::string s = base;
    s += '[';
    s += std::to_string(i);
    s += ']';
    return s;
}

[[noreturn]] void fail(const Snapshot& s, const std::string& path, const std::string& what)
{
    throw LoadError(s.path, LoadError::kNoOffset, path + ": " + what);
}

/// Bytes are negated and summed: the sum-safe limit (jsonrules::kProfileTimeline).
int64_t intAt(const Snapshot& s, const json& v, const std::string& path)
{
    return jsonIntegerAt(v, jsonrules::kProfileTimeline, s.path, path);
}

/// One event with what the profiler knows beside it: the exact category and the total after it.
void push(TraceEvents& ev, TraceAction a, uint64_t addr, int64_t size, int64_t timeUs, TensorCategory cat,
          int64_t total)
{
    ev.append({.action = a, .addr = addr, .size = size, .timeUs = timeUs});
    ev.category.push_back(static_cast<uint8_t>(cat));
    ev.totalAllocated.push_back(total);
}

DeviceData& timelineDevice(Snapshot& snap, const char* format)
{
    DeviceData dev;
    dev.device = 0;
    dev.deviceType = "cuda";
    dev.sourceFormat = format;
    dev.sourceFile = snap.path;
    snap.devices.push_back(std::move(dev));
    snap.notes.push_back("the profiler timeline does not name its device; export_memory_timeline defaults to "
                         "cuda:0, so it is shown as device 0");
    snap.notes.push_back("tensor categories are exact (from PyTorch's memory profiler); there are no stacks or "
                         "addresses, so allocations are paired by size and category");
    return snap.devices.back();
}

TensorCategory categoryAt(int64_t c)
{
    return c >= 0 && c < kProfilerCategoryCount ? static_cast<TensorCategory>(c) : TensorCategory::Unknown;
}

} // namespace

bool ProfileTimelineImporter::acceptsRaw(const json& root)
{
    if (!root.is_array() || root.empty())
        return false;
    const json& r = root[0];
    return r.is_array() && r.size() == 4 && r[0].is_number() && r[1].is_number();
}

bool ProfileTimelineImporter::acceptsTimesSizes(const json& root)
{
    return root.is_array() && root.size() == 2 && root[0].is_array() && root[1].is_array() &&
           (root[0].empty() || root[0][0].is_number()) && (root[1].empty() || root[1][0].is_array());
}

void ProfileTimelineImporter::importRaw(const json& root, Snapshot& snap)
{
    snap.format = "export_memory_timeline raw rows (JSON)";
    snap.schemaEra = "profiler memory timeline (PyTorch 2.1+)";
    DeviceData& dev = timelineDevice(snap, "memory timeline (raw)");
    TraceEvents& ev = dev.trace;
    const size_t n = root.size();
    ev.reserve(n);
    // PREEXISTING rows carry t = -1; PyTorch stamps them with the smallest positive time.
    int64_t minT = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < n; ++i) {
        const std::string path = at("", i);
        const json& r = root[i];
        if (!r.is_array() || r.size() != 4)
            fail(snap, path, std::string("expected a row [timestamp_ns, action, numbytes, category], found ") +
                                 (r.is_array() ? "a list of " + std::to_string(r.size()) : std::string(r.type_name())));
        const int64_t t = intAt(snap, r[0], at(path, 0));
        if (t >= 0)
            minT = std::min(minT, t);
    }
    if (minT == std::numeric_limits<int64_t>::max())
        minT = 0;
    FakeAddresses fake; // paired by (size, category)
    int64_t total = 0;
    uint64_t lastDecrementAddr = 0;
    for (size_t i = 0; i < n; ++i) {
        const std::string path = at("", i);
        const json& r = root[i];
        int64_t t = intAt(snap, r[0], at(path, 0));
        const int64_t action = intAt(snap, r[1], at(path, 1));
        const int64_t bytes = intAt(snap, r[2], at(path, 2));
        const int64_t catIndex = intAt(snap, r[3], at(path, 3));
        if (action < 1 || action > 4)
            fail(snap, at(path, 1), "expected an action 1..4 (PREEXISTING, CREATE, INCREMENT_VERSION, DESTROY), found " +
                                         std::to_string(action));
        if (t < 0)
            t = minT;
        const TensorCategory cat = categoryAt(catIndex);
        const int64_t timeUs = t / 1000;
        total += bytes;
        static const char* kNames[] = {"", "preexisting", "create", "increment_version", "destroy"};
        ++dev.actionCounts[kNames[action]];
        if (bytes >= 0) {
            // An INCREMENT_VERSION's +n keeps the address its -n freed: the same tensor, new category.
            const uint64_t reuse = action == 3 ? lastDecrementAddr : 0;
            if (reuse != 0)
                lastDecrementAddr = 0;
            const uint64_t addr = fake.alloc({bytes, static_cast<uint8_t>(cat)}, reuse);
            push(ev, TraceAction::Alloc, addr, bytes, timeUs, cat, total);
        } else {
            const uint64_t addr = fake.free({-bytes, static_cast<uint8_t>(cat)});
            lastDecrementAddr = action == 3 ? addr : 0;
            push(ev, TraceAction::Free, addr, -bytes, timeUs, cat, total);
        }
    }
    ev.anyTime = n > 0;
}

void ProfileTimelineImporter::importTimesSizes(const json& root, Snapshot& snap)
{
    snap.format = "export_memory_timeline [times, sizes] (JSON)";
    snap.schemaEra = "profiler memory timeline";
    const json& times = root[0];
    const json& sizes = root[1];
    if (times.size() != sizes.size())
        fail(snap, "[1]", "expected one sizes row per time (" + std::to_string(times.size()) + "), found " +
                              std::to_string(sizes.size()));
    DeviceData& dev = timelineDevice(snap, "memory timeline");
    TraceEvents& ev = dev.trace;
    std::array<int64_t, kProfilerCategoryCount> band{};
    int64_t total = 0;
    for (size_t i = 0; i < times.size(); ++i) {
        const std::string path = at("[1]", i);
        const int64_t t = intAt(snap, times[i], at("[0]", i));
        const json& row = sizes[i];
        if (!row.is_array() || row.size() < kProfilerCategoryCount + 1)
            fail(snap, path, "expected a row of 9 ints [0, PARAMETER, ..., UNKNOWN], found " +
                                 (row.is_array() ? "a list of " + std::to_string(row.size()) : std::string(row.type_name())));
        std::array<int64_t, kProfilerCategoryCount> next{};
        for (int c = 0; c < kProfilerCategoryCount; ++c) {
            const int64_t v = intAt(snap, row[static_cast<size_t>(c) + 1], at(path, static_cast<size_t>(c) + 1));
            if (v < 0)
                fail(snap, at(path, static_cast<size_t>(c) + 1), "expected a byte count >= 0, found " + std::to_string(v));
            next[static_cast<size_t>(c)] = v;
        }
        // Shrinking bands first, then growing ones: no event shows more than the row's total.
        for (const bool growing : {false, true})
            for (int c = 0; c < kProfilerCategoryCount; ++c) {
                const auto k = static_cast<size_t>(c);
                const int64_t v = next[k];
                if (v == band[k] || (v > band[k]) != growing)
                    continue;
                const uint64_t addr = FakeAddresses::kBase + static_cast<uint64_t>(c) * 0x10000000000ull;
                total += v - band[k];
                if (v == 0) {
                    push(ev, TraceAction::Free, addr, band[k], t, static_cast<TensorCategory>(c), total);
                    ++dev.actionCounts["free"];
                } else {
                    // Replaces the band's previous allocation (replay closes an alloc at a live address).
                    push(ev, TraceAction::Alloc, addr, v, t, static_cast<TensorCategory>(c), total);
                    ++dev.actionCounts["alloc"];
                }
                band[k] = v;
            }
    }
    ev.anyTime = ev.count() > 0;
}

} // namespace headroom
