// SPDX-License-Identifier: MIT
#include "core/analysis/capturedoctor.h"

#include "core/util/text.h"

#include "core/model/runconfig.h"
#include "core/util/units.h"

#include <algorithm>
#include <cctype>

namespace headroom {

namespace {

// The recording helper's default ring size (python/headroom_record.py DEFAULT_MAX_ENTRIES).
constexpr int64_t kHelperMaxEntries = 1'000'000;
// Below this share of allocations with a stack (or of stacks with a Python frame) the
// file is treated as having none: a handful of stacked allocations do not explain a peak.
constexpr double kFewShare = 0.10;

bool isSnapshotSource(const DeviceData& dev)
{
    // "" (a .hrt written before source formats were stored), "snapshot", "snapshot (JSON)".
    return dev.sourceFormat.empty() || dev.sourceFormat.rfind("snapshot", 0) == 0;
}

std::string setting(const Snapshot& snap, const std::string& key)
{
    for (const auto& [k, v] : snap.allocatorSettings)
        if (k == key)
            return v;
    return {};
}

/// A ring size someone typed: 1000, 5000, 100000, 2^20, ... A trace that holds exactly
/// such a count of entries most likely filled its ring buffer.
bool isRoundCount(int64_t n)
{
    if (n < 1000)
        return false;
    if ((n & (n - 1)) == 0)
        return true;
    while (n % 10 == 0)
        n /= 10;
    return n < 10;
}

/// A ring size to suggest: the helper's default, or four times what overflowed, rounded up
/// to a million.
int64_t suggestedEntries(int64_t entries)
{
    const int64_t want = std::max(kHelperMaxEntries, entries * 4);
    return (want + kHelperMaxEntries - 1) / kHelperMaxEntries * kHelperMaxEntries;
}

std::string devicePrefix(const DeviceData& dev) { return "device " + std::to_string(dev.device) + ": "; }

/// What one device's replay says about memory from before its trace began.
struct BeforeWindow {
    int64_t freed = 0, freedBytes = 0; ///< freed in the window, never allocated in it
    int64_t ghosts = 0, ghostBytes = 0; ///< active at the end, never allocated in the window
};

BeforeWindow beforeWindow(const MemoryTimeline& tl)
{
    BeforeWindow b;
    for (const Allocation& a : tl.allocations) {
        if (a.start != Allocation::kBeforeWindow)
            continue;
        if (a.end == Allocation::kStillAlive) {
            ++b.ghosts;
            b.ghostBytes += a.size;
        } else {
            ++b.freed;
            b.freedBytes += a.size;
        }
    }
    return b;
}

using Sev = CaptureFinding::Severity;

/// Why we believe a device's ring buffer wrapped, or "" when nothing says so. A late start
/// alone also leaves frees without allocations; only these signs tell a cut history apart.
std::string truncationEvidence(const Snapshot& snap, const DeviceData& dev, const BeforeWindow& before)
{
    const auto n = static_cast<int64_t>(dev.trace.count());
    if (truthy(setting(snap, "trace_alloc_overflowed")))
        return "allocator_settings.trace_alloc_overflowed is set: older events were overwritten";
    const std::string maxText = setting(snap, "trace_alloc_max_entries");
    if (!maxText.empty() && maxText == std::to_string(n))
        return "the trace holds exactly trace_alloc_max_entries = " + maxText + " entries";
    if (n == 1 && before.ghosts > 0)
        return "the trace holds 1 entry, PyTorch 2.0's default trace_alloc_max_entries=1, while " +
               std::to_string(before.ghosts) + " blocks (" + formatBytes(before.ghostBytes) +
               ") are allocated";
    if (isRoundCount(n) && before.freed > 0)
        return "the trace holds exactly " + std::to_string(n) + " entries, a ring-buffer size, and starts with frees of " +
               std::to_string(before.freed) + " allocations it never saw";
    return {};
}

const std::string kStartEarly = "start recording before the model touches the GPU: "
                                "rec = Recorder(\"snapshots\").start() before model.cuda() (python/headroom_record.py), "
                                "or torch.cuda.memory._record_memory_history(max_entries=1000000) as the first CUDA call";

} // namespace

const char* severityName(CaptureFinding::Severity s) { return s == Sev::Warning ? "warning" : "info"; }

const std::vector<std::string>& CaptureDoctor::kinds()
{
    static const std::vector<std::string> k = {
        "history_truncated",  "frees_without_allocations", "no_history",        "devices_without_history",
        "no_stacks",          "cpp_only_stacks",           "pickle_protocol_5", "not_a_snapshot",
        "no_annotations",     "no_phase_markers",          "no_oom_record",     "allocator_settings_unknown",
        "no_timestamps",      "fake_recording",            "cpu_autocast_for_gpu"};
    return k;
}

int CaptureDoctor::pickleProtocol(const Snapshot& snapshot)
{
    // The loader writes "pickle protocol N[, gzip]" or "C++ (TorchScript) pickler, protocol N"
    // from PickleDocument::protocol(); a .hrt's format starts "Headroom trace" and is not a pickle.
    const std::string& f = snapshot.format;
    size_t at = std::string::npos;
    if (f.rfind("pickle protocol ", 0) == 0)
        at = 16;
    else if (f.rfind("C++ (TorchScript) pickler, protocol ", 0) == 0)
        at = 36;
    if (at == std::string::npos || at >= f.size() || !std::isdigit(static_cast<unsigned char>(f[at])))
        return 0;
    return f[at] - '0';
}

std::vector<CaptureFinding> CaptureDoctor::examine(const LoadedTrace& trace)
{
    const Snapshot& snap = trace.snapshot;
    std::vector<CaptureFinding> out;
    auto add = [&out](std::string kind, Sev sev, std::vector<int> devs, std::string msg, std::string fix,
                      std::vector<std::pair<std::string, int64_t>> data = {}) {
        out.push_back({std::move(kind), sev, std::move(devs), std::move(msg), std::move(fix), std::move(data)});
    };

    // Which devices are allocator snapshots (the only source with segments, stacks, OOM
    // records and settings), and which of those recorded a history.
    std::vector<size_t> snapDevs, withHistory, withoutHistory;
    for (size_t d = 0; d < snap.devices.size(); ++d) {
        const DeviceData& dev = snap.devices[d];
        if (!isSnapshotSource(dev))
            continue;
        snapDevs.push_back(d);
        (dev.trace.count() > 0 ? withHistory : withoutHistory).push_back(d);
    }
    const bool legacy20 = snap.schemaEra.rfind("1.", 0) == 0; // 1.13-2.0 or a bare list

    // 1. A cut history, and memory from before the window (per device with a history).
    for (size_t d : withHistory) {
        const DeviceData& dev = snap.devices[d];
        const MemoryTimeline& tl = trace.timelines[d];
        if (!dev.trace.totalAllocated.empty())
            continue; // the source's own totals: the curve is exact whatever the window
        const BeforeWindow b = beforeWindow(tl);
        const auto n = static_cast<int64_t>(dev.trace.count());
        const std::string why = truncationEvidence(snap, dev, b);
        if (!why.empty()) {
            const std::string entries = std::to_string(suggestedEntries(n));
            add("history_truncated", Sev::Warning, {dev.device},
                devicePrefix(dev) + "the history was cut by max_entries (" + why +
                    "); what happened before the first of its " + std::to_string(n) +
                    (n == 1 ? " event" : " events") + " is lost",
                legacy20 ? "record a longer history: torch.cuda.memory._record_memory_history(True, "
                           "trace_alloc_max_entries=" + entries + ", trace_alloc_record_context=True) on PyTorch 2.0; "
                           "on 2.1+ Recorder(\"snapshots\", max_entries=" + entries + ")"
                         : "record a longer history: Recorder(\"snapshots\", max_entries=" + entries +
                               ") (python/headroom_record.py), or torch.cuda.memory._record_memory_history(max_entries=" +
                               entries + ")",
                {{"trace_entries", n}, {"suggested_max_entries", suggestedEntries(n)}});
        }
        if (b.freed + b.ghosts > 0) {
            // The two ways the replay learns of memory from before the window: a free whose
            // allocation it never saw, and a block still allocated at the end without one.
            std::string parts;
            if (b.freed > 0)
                parts = std::to_string(b.freed) + " freed in the trace without their allocation (" +
                        formatBytes(b.freedBytes) + ")";
            if (b.ghosts > 0)
                parts += (parts.empty() ? "" : ", ") + std::to_string(b.ghosts) + " still allocated at the end (" +
                         formatBytes(b.ghostBytes) + ")";
            CaptureFinding f{"frees_without_allocations", Sev::Warning, {dev.device},
                      devicePrefix(dev) + std::to_string(b.freed + b.ghosts) + " allocations were made before the " +
                          "trace begins: " + parts + "; the baseline of " + formatBytes(tl.initialAllocated) +
                          " before the first event is reconstructed from them, with no allocation event or time",
                      why.empty() ? kStartEarly
                                  : kStartEarly + "; and a larger max_entries, since the ring buffer wrapped",
                      {{"freed_without_allocation", b.freed},
                       {"freed_without_allocation_bytes", b.freedBytes},
                       {"allocated_before_trace", b.ghosts},
                       {"allocated_before_trace_bytes", b.ghostBytes},
                       {"reconstructed_baseline_bytes", tl.initialAllocated}}};
            out.push_back(std::move(f));
        }
    }

    // 2. No history at all, or only on some devices.
    if (!snapDevs.empty() && withHistory.empty()) {
        add("no_history", Sev::Warning, {},
            "no device has trace entries (memory history was not recorded): only the final state is known, "
            "no timeline, no peak, no lifetimes",
            "record the history before the run: Recorder(\"snapshots\").start() (python/headroom_record.py), or "
            "torch.cuda.memory._record_memory_history(max_entries=1000000) and then "
            "torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")");
    } else if (!withHistory.empty() && !withoutHistory.empty()) {
        std::vector<int> devs;
        std::string list;
        for (size_t d : withoutHistory) {
            devs.push_back(snap.devices[d].device);
            list += (list.empty() ? "" : ", ") + std::to_string(snap.devices[d].device);
        }
        add("devices_without_history", Sev::Warning, devs,
            std::to_string(snap.devices.size()) + " devices but only " + std::to_string(withHistory.size()) +
                " with a history: device" + (devs.size() > 1 ? "s " : " ") + list +
                (devs.size() > 1 ? " show" : " shows") + " only the final state",
            "each device's allocator keeps its own history from the moment recording starts: start it before any "
            "device allocates (Recorder(\"snapshots\").start() before the model is moved to the GPUs), and with one "
            "process per GPU record every rank (Recorder(\"snapshots\", ranks=\"all\"), the default)",
            {{"devices", static_cast<int64_t>(snap.devices.size())},
             {"devices_with_history", static_cast<int64_t>(withHistory.size())}});
    }

    // 3. Stacks: none, or C++ frames only (no Python frame to name the user's code).
    int64_t allocations = 0, stacked = 0, python = 0;
    std::vector<int8_t> hasPython(snap.frames.stackCount(), -1);
    for (size_t d : snapDevs) {
        for (const Allocation& a : trace.timelines[d].allocations) {
            ++allocations;
            if (a.stack == 0 || a.stack >= hasPython.size())
                continue;
            ++stacked;
            int8_t& p = hasPython[a.stack];
            if (p < 0) {
                p = 0;
                for (uint32_t f : snap.frames.stack(a.stack))
                    if (snap.frames.isPythonFrame(f)) {
                        p = 1;
                        break;
                    }
            }
            python += p;
        }
    }
    if (allocations > 0 && double(stacked) < kFewShare * double(allocations)) {
        add("no_stacks", Sev::Warning, {},
            std::to_string(stacked) + " of " + std::to_string(allocations) +
                " allocations have a stack: the code that allocated memory cannot be shown",
            legacy20 ? "record stacks: torch.cuda.memory._record_memory_history(True, trace_alloc_record_context=True) "
                       "on PyTorch 2.0; on 2.1+ Recorder(\"snapshots\", context=\"all\", stacks=\"python\")"
                     : "record stacks: Recorder(\"snapshots\", context=\"all\", stacks=\"python\") "
                       "(python/headroom_record.py), or torch.cuda.memory._record_memory_history(context=\"all\", "
                       "stacks=\"python\", max_entries=1000000)",
            {{"allocations", allocations}, {"with_stack", stacked}});
    } else if (stacked > 0 && double(python) < kFewShare * double(stacked)) {
        add("cpp_only_stacks", Sev::Warning, {},
            std::to_string(stacked - python) + " of " + std::to_string(stacked) +
                " stacks have C++ frames only: no Python frame names the model code that allocated",
            "record Python frames: Recorder(\"snapshots\", stacks=\"all\") (C++ and Python frames) or "
            "stacks=\"python\", or torch.cuda.memory._record_memory_history(context=\"all\", stacks=\"all\"), "
            "from the Python process that trains",
            {{"with_stack", stacked}, {"with_python_frame", python}});
    }

    // 4. The file format itself.
    if (pickleProtocol(snap) == 5)
        add("pickle_protocol_5", Sev::Warning, {},
            "the file is pickle protocol 5 (Python 3.14's default): pytorch.org/memory_viz shows a blank page for "
            "it (Headroom reads it)",
            "dump with protocol 4: pickle.dump(torch.cuda.memory._snapshot(), f, protocol=4) "
            "(Recorder(\"snapshots\").dump() in python/headroom_record.py always writes protocol 4)");
    std::vector<int> other;
    std::string otherFormat;
    for (const DeviceData& dev : snap.devices)
        if (!isSnapshotSource(dev)) {
            other.push_back(dev.device);
            otherFormat = dev.sourceFormat;
        }
    if (!other.empty())
        add("not_a_snapshot", Sev::Info, other,
            "a " + otherFormat + " has the memory curve but no allocator segments, no OOM record and no "
            "allocator settings",
            "for a postmortem record an allocator snapshot: Recorder(\"snapshots\").start() "
            "(python/headroom_record.py), or torch.cuda.memory._record_memory_history(max_entries=1000000) and "
            "torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")");

    // 5. Details that make the analysis weaker, not wrong.
    if (!withHistory.empty()) {
        bool phaseMarker = false;
        for (const Annotation& a : snap.annotations) {
            // What the phase classifier takes as forward/loss/backward or an iteration:
            // optimizer windows alone leave the rest of the step to the stacks.
            const std::string n = asciiLower(a.name);
            if (n.find("forward") != std::string::npos || n.find("backward") != std::string::npos ||
                n.find("loss") != std::string::npos || n.rfind("headroom.iteration#", 0) == 0 ||
                n.rfind("profilerstep#", 0) == 0)
                phaseMarker = true;
        }
        const std::string markFix =
            "mark the phases: Recorder(\"snapshots\").attach(model, optimizer) (automatic), or "
            "with rec.phase(\"forward\"): ... / rec.phase(\"loss\") / rec.phase(\"backward\") / "
            "rec.phase(\"optimizer\") around each part of the step (python/headroom_record.py; PyTorch >= 2.5 keeps "
            "them in external_annotations)";
        if (snap.annotations.empty() && snap.timeWindows.empty())
            add("no_annotations", Sev::Info, {},
                "the file has no phase annotations: forward, loss, backward and optimizer are inferred from the "
                "stacks alone",
                markFix);
        else if (!phaseMarker && snap.timeWindows.empty())
            add("no_phase_markers", Sev::Info, {},
                std::to_string(snap.annotations.size()) +
                    " annotations, none of them marks forward, loss, backward or an iteration: those phases are "
                    "inferred from the stacks",
                markFix);
    }
    // A fake-tensor recording (python/headroom_fake.py) ran on no device: no OOM to record.
    const bool fake = truthy(runSetting(snap, "fake"));
    if (fake)
        add("fake_recording", Sev::Info, {},
            "a fake-tensor recording (headroom_cpu fake mode): the sizes, order and lifetimes of a step that no device "
            "ran; its times are the recorder's, not the kernels', and memory outside PyTorch's tensors (the CUDA "
            "context, cuBLAS workspaces) is the what-if's estimate",
            "give the target device to the what-if and the ladder (--capacity 80GiB, or the panel's device) to read "
            "where it would run out");
    // The CPU recorder's autocast is the CPU's lists unless the step ran under CUDA's emulated.
    const std::string precision = runSetting(snap, "precision");
    if (recordedForGpuTarget(snap) && precision.rfind("amp", 0) == 0 && runSetting(snap, "autocast") != "cuda")
        add("cpu_autocast_for_gpu", Sev::Warning, {},
            "recorded under the CPU's autocast lists (PyTorch " + runSetting(snap, "torch_version") +
                ") for a GPU target (" + runSetting(snap, "target_device") +
                "): CUDA's autocast runs softmax, log_softmax, layer_norm, pow, exp and the losses in fp32, so the "
                "GPU holds more than this file shows wherever those ops take bf16 inputs (an eager attention's "
                "probabilities)",
            "run the autocast region under headroom_autocast.cuda_autocast() instead of torch.autocast(\"cpu\") "
            "(python/README.md), or record in fp32 with target_device= and project --precision amp-bf16, which "
            "replays CUDA's lists");
    bool anyOom = false;
    for (size_t d : snapDevs)
        anyOom |= !snap.devices[d].ooms.empty();
    if (!snapDevs.empty() && !anyOom && !fake)
        add("no_oom_record", Sev::Info, {},
            "no OOM record: the snapshot was not taken at an out-of-memory, so the failing request and the free "
            "memory at that moment are unknown",
            "dump at the out-of-memory itself: Recorder(\"snapshots\", dump_on_oom=True) (the default), or "
            "torch._C._cuda_attach_out_of_memory_observer(lambda device, alloc, device_alloc, device_free: "
            "torch.cuda.memory._dump_snapshot(\"oom.pickle\"))");
    if (!snapDevs.empty() && snap.allocatorSettings.empty())
        add("allocator_settings_unknown", Sev::Info, {},
            "the file has no allocator_settings: expandable_segments, max_split_size and the rest of "
            "PYTORCH_CUDA_ALLOC_CONF are unknown",
            "record with PyTorch 2.3 or later (its _snapshot() carries allocator_settings); on older versions keep "
            "PYTORCH_CUDA_ALLOC_CONF beside the file");
    std::vector<int> untimed;
    for (size_t d : withHistory)
        if (!snap.devices[d].trace.anyTime)
            untimed.push_back(snap.devices[d].device);
    if (!untimed.empty())
        add("no_timestamps", Sev::Info, untimed,
            "the trace entries have no time_us: the x-axis is the event index and durations are unknown",
            "record with PyTorch 2.2 or later (trace entries carry time_us)");

    // Warnings first (kinds() lists them first), then by kind; a kind's devices stay in order.
    std::stable_sort(out.begin(), out.end(), [](const CaptureFinding& a, const CaptureFinding& b) {
        const auto& k = kinds();
        return std::find(k.begin(), k.end(), a.kind) < std::find(k.begin(), k.end(), b.kind);
    });
    return out;
}

} // namespace headroom
