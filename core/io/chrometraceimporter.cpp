// SPDX-License-Identifier: MIT
#include "core/io/chrometraceimporter.h"

#include "core/io/fakeaddresses.h"
#include "core/io/jsoninteger.h"
#include "core/util/loaderror.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace headroom {

namespace {

using json = nlohmann::json;

bool startsWith(const std::string& s, std::string_view p)
{
    return s.size() >= p.size() && std::string_view(s).substr(0, p.size()) == p;
}

std::optional<TimeWindowKind> windowKind(const std::string& name, const std::string& cat)
{
    if (startsWith(name, "ProfilerStep#"))
        return TimeWindowKind::ProfilerStep;
    if (startsWith(name, "Optimizer.step#"))
        return TimeWindowKind::OptimizerStep;
    if (startsWith(name, "Optimizer.zero_grad#"))
        return TimeWindowKind::ZeroGrad;
    if (startsWith(name, "autograd::engine::evaluate_function"))
        return TimeWindowKind::Backward;
    if (cat == "user_annotation")
        return TimeWindowKind::UserAnnotation;
    return std::nullopt;
}

const json* member(const json& o, const char* key)
{
    auto it = o.find(key);
    return it == o.end() || it->is_null() ? nullptr : &*it;
}

std::string deviceTypeName(int64_t type)
{
    // c10::DeviceType values.
    switch (type) {
    case 0: return "cpu";
    case 1: return "cuda";
    case 6: return "hip";
    case 9: return "xla";
    case 12: return "xpu";
    case 13: return "mps";
    case 15: return "hpu";
    case 19: return "mtia";
    case 20: return "privateuseone";
    default: return "device type " + std::to_string(type);
    }
}

struct MemRecord {
    int64_t timeNs = 0;
    int64_t evIdx = -1;
    size_t order = 0;
    int64_t bytes = 0;
    uint64_t addr = 0;
    bool hasAddr = false;
    std::optional<int64_t> totalAllocated, totalReserved;
    bool oom = false;
};

class Importer {
public:
    explicit Importer(Snapshot& snap) : m_snap(snap) {}
    void run(const json& root);

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const
    {
        throw LoadError(m_snap.path, LoadError::kNoOffset, path + ": " + what);
    }
    /// Bytes are negated and summed: the sum-safe limit (jsonrules::kChromeTrace).
    int64_t intOf(const json& v, const std::string& path) const
    {
        return jsonIntegerAt(v, jsonrules::kChromeTrace, m_snap.path, path);
    }
    /// `ts`/`dur` in µs, integer (≤ 2.3) or fractional with ns digits (2.4+), to ns.
    int64_t nsOf(const json& v, const std::string& path) const
    {
        // Range-checked before the * 1000 (found by fuzzing: a ts of 1.6e16 overflowed int64).
        constexpr int64_t kMaxUs = std::numeric_limits<int64_t>::max() / 1000;
        if (v.is_number_integer() && !v.is_number_unsigned()) {
            const int64_t us = v.get<int64_t>();
            if (us > kMaxUs || us < -kMaxUs)
                fail(path, "time " + std::to_string(us) + " us is out of range");
            return us * 1000;
        }
        if (v.is_number_unsigned()) {
            if (v.get<uint64_t>() > static_cast<uint64_t>(kMaxUs))
                fail(path, "time " + std::to_string(v.get<uint64_t>()) + " us is out of range");
            return static_cast<int64_t>(v.get<uint64_t>()) * 1000;
        }
        if (v.is_number_float() && std::isfinite(v.get<double>())) {
            if (std::fabs(v.get<double>()) >= static_cast<double>(kMaxUs))
                fail(path, "time " + std::to_string(v.get<double>()) + " us is out of range");
            return static_cast<int64_t>(std::llround(v.get<double>() * 1000.0));
        }
        fail(path, std::string("expected a time in µs, found ") + v.type_name());
    }
    void memoryEvent(const json& e, const std::string& path, size_t order, bool oom);
    void buildDevices();

    Snapshot& m_snap;
    int64_t m_baseNs = 0;
    std::map<std::pair<int64_t, int64_t>, std::vector<MemRecord>> m_records; // (type, id)
    int m_rank = -1;
};

void Importer::run(const json& root)
{
    const json* events = &root;
    if (root.is_object()) {
        if (const json* b = member(root, "baseTimeNanoseconds"))
            m_baseNs = intOf(*b, "baseTimeNanoseconds");
        if (const json* d = member(root, "distributedInfo"); d && d->is_object())
            if (const json* r = member(*d, "rank"))
                m_rank = static_cast<int>(intOf(*r, "distributedInfo.rank"));
        events = member(root, "traceEvents");
        if (!events || !events->is_array())
            fail("traceEvents", std::string("expected a list of trace events, found ") +
                                    (events ? events->type_name() : "nothing"));
    }
    m_snap.format = "Chrome trace (JSON)";
    std::string version;
    if (root.is_object())
        if (const json* v = member(root, "schemaVersion"))
            version = v->dump();
    for (size_t i = 0; i < events->size(); ++i) {
        const json& e = (*events)[i];
        if (!e.is_object())
            continue;
        const json* name = member(e, "name");
        if (!name || !name->is_string())
            continue;
        const std::string& n = name->get_ref<const std::string&>();
        const std::string path = "traceEvents[" + std::to_string(i) + "]";
        if (n == "[memory]" || n == "[OutOfMemory]") {
            memoryEvent(e, path, i, n == "[OutOfMemory]");
            continue;
        }
        const json* ph = member(e, "ph");
        if (!ph || *ph != "X")
            continue;
        const json* cat = member(e, "cat");
        const std::string catText = cat && cat->is_string() ? cat->get<std::string>() : std::string();
        auto kind = windowKind(n, catText);
        if (!kind)
            continue;
        const json* ts = member(e, "ts");
        if (!ts)
            fail(path + ".ts", "expected a start time, found nothing");
        TimeWindow w;
        w.name = n;
        w.kind = *kind;
        w.startUs = (m_baseNs + nsOf(*ts, path + ".ts")) / 1000;
        const json* dur = member(e, "dur");
        w.endUs = w.startUs + (dur ? nsOf(*dur, path + ".dur") / 1000 : 0);
        if (const json* tid = member(e, "tid"); tid && tid->is_number())
            w.tid = intOf(*tid, path + ".tid");
        m_snap.timeWindows.push_back(std::move(w));
    }
    std::stable_sort(m_snap.timeWindows.begin(), m_snap.timeWindows.end(),
                     [](const TimeWindow& a, const TimeWindow& b) { return a.startUs < b.startUs; });
    m_snap.schemaEra = "Kineto trace" + (version.empty() ? std::string() : " schema " + version);
    buildDevices();
    if (m_snap.devices.empty())
        m_snap.notes.push_back("the trace has no [memory] events: record it with "
                               "torch.profiler.profile(profile_memory=True)");
}

void Importer::memoryEvent(const json& e, const std::string& path, size_t order, bool oom)
{
    const json* args = member(e, "args");
    if (!args || !args->is_object())
        fail(path + ".args", "expected the memory event's args {Device Type, Device Id, Bytes, ...}");
    const json* ts = member(e, "ts");
    if (!ts)
        fail(path + ".ts", "expected a time stamp, found nothing");
    MemRecord r;
    r.order = order;
    r.oom = oom;
    r.timeNs = m_baseNs + nsOf(*ts, path + ".ts");
    const json* bytes = member(*args, "Bytes");
    if (!bytes)
        fail(path + ".args.Bytes", "expected the allocation size, found nothing");
    r.bytes = intOf(*bytes, path + ".args.Bytes");
    const json* type = member(*args, "Device Type");
    const int64_t t = type ? intOf(*type, path + ".args.Device Type") : 1;
    const json* id = member(*args, "Device Id");
    const int64_t d = id ? intOf(*id, path + ".args.Device Id") : (t == 0 ? -1 : 0);
    if (const json* a = member(*args, "Addr")) {
        r.addr = static_cast<uint64_t>(intOf(*a, path + ".args.Addr"));
        r.hasAddr = true;
    }
    if (const json* ta = member(*args, "Total Allocated"))
        r.totalAllocated = intOf(*ta, path + ".args.Total Allocated");
    if (const json* tr = member(*args, "Total Reserved"))
        r.totalReserved = intOf(*tr, path + ".args.Total Reserved");
    if (const json* ix = member(*args, "Ev Idx"))
        r.evIdx = intOf(*ix, path + ".args.Ev Idx");
    m_records[{t, d}].push_back(r);
}

void Importer::buildDevices()
{
    std::map<int, bool> used;
    for (auto& [key, recs] : m_records) {
        const auto [type, id] = key;
        std::stable_sort(recs.begin(), recs.end(), [](const MemRecord& a, const MemRecord& b) {
            if (a.timeNs != b.timeNs)
                return a.timeNs < b.timeNs;
            if (a.evIdx != b.evIdx && a.evIdx >= 0 && b.evIdx >= 0)
                return a.evIdx < b.evIdx;
            return a.order < b.order;
        });
        DeviceData dev;
        dev.deviceType = deviceTypeName(type);
        dev.device = type == 0 ? -1 : static_cast<int>(id);
        while (used.count(dev.device)) // a second device type with the same id
            dev.device += 1000;
        used[dev.device] = true;
        dev.sourceFormat = "chrome trace";
        dev.sourceFile = m_snap.path;
        dev.rank = m_rank;
        TraceEvents& ev = dev.trace;
        ev.reserve(recs.size());
        bool allTotals = true, allReserved = true;
        for (const MemRecord& r : recs) {
            if (r.oom)
                continue;
            allTotals = allTotals && r.totalAllocated.has_value();
            allReserved = allReserved && r.totalReserved.has_value();
        }
        FakeAddresses fake; // only without Addr
        int64_t running = 0, minRunning = 0, lastTotal = 0, lastReserved = 0;
        std::vector<int64_t> totals, reserved;
        for (const MemRecord& r : recs) {
            const auto idx = static_cast<int64_t>(ev.count());
            TraceAction a;
            uint64_t addr = r.addr;
            int64_t size = r.bytes < 0 ? -r.bytes : r.bytes;
            if (r.oom) {
                a = TraceAction::Oom;
                addr = 0;
                dev.ooms.push_back({idx, r.bytes, 0});
                ++dev.actionCounts["oom"];
            } else if (r.bytes >= 0) {
                a = TraceAction::Alloc;
                if (!r.hasAddr)
                    addr = fake.alloc({size, 0});
                running += r.bytes;
                ++dev.actionCounts["alloc"];
            } else {
                a = TraceAction::Free;
                if (!r.hasAddr)
                    addr = fake.free({size, 0});
                running += r.bytes;
                ++dev.actionCounts["free"];
            }
            minRunning = std::min(minRunning, running);
            if (r.totalAllocated)
                lastTotal = *r.totalAllocated;
            if (r.totalReserved)
                lastReserved = *r.totalReserved;
            totals.push_back(allTotals ? lastTotal : running);
            reserved.push_back(lastReserved);
            ev.append({.action = a, .addr = addr, .size = size, .timeUs = r.timeNs / 1000});
        }
        ev.anyTime = ev.count() > 0;
        const std::string dn = dev.deviceType + " device " + std::to_string(dev.device) + ": ";
        if (!allTotals) {
            for (int64_t& v : totals)
                v -= minRunning; // never below zero: at least that much was allocated before
            dev.relativeCurve = true;
            m_snap.notes.push_back(dn + "the trace has no 'Total Allocated' (PyTorch 1.9-era memory events); "
                                        "allocated bytes are relative to the start of the profiling window");
        }
        ev.totalAllocated = std::move(totals);
        if (allReserved && ev.count() > 0)
            ev.totalReserved = std::move(reserved);
        else if (ev.count() > 0)
            m_snap.notes.push_back(dn + "the trace has no 'Total Reserved'; the reserved curve is unknown (0)");
        m_snap.devices.push_back(std::move(dev));
    }
    std::sort(m_snap.devices.begin(), m_snap.devices.end(),
              [](const DeviceData& a, const DeviceData& b) { return a.device < b.device; });
}

} // namespace

bool ChromeTraceImporter::accepts(const json& root)
{
    if (root.is_object())
        return root.contains("traceEvents");
    return root.is_array() && !root.empty() && root[0].is_object() && root[0].contains("ph");
}

bool ChromeTraceImporter::keepEvent(const json& parsed)
{
    auto ph = parsed.find("ph");
    if (ph == parsed.end())
        return true; // not a trace event
    auto name = parsed.find("name");
    if (name == parsed.end() || !name->is_string())
        return false;
    const std::string& n = name->get_ref<const std::string&>();
    if (n == "[memory]" || n == "[OutOfMemory]")
        return true;
    if (*ph != "X")
        return false;
    auto cat = parsed.find("cat");
    const std::string c = cat != parsed.end() && cat->is_string() ? cat->get<std::string>() : std::string();
    return windowKind(n, c).has_value();
}

void ChromeTraceImporter::import(const json& root, Snapshot& snapshot)
{
    Importer(snapshot).run(root);
}

} // namespace headroom
